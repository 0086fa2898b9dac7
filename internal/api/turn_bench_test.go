package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/processor/echo"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// BenchmarkTurn measures one echo turn through the whole handler stack —
// routing, auth, body decode, begin, processor, commit, answer encode — on
// the embedded store, in process (no sockets), so -benchmem reports the
// allocations a turn costs:
//
//	go test -run '^$' -bench BenchmarkTurn -benchmem ./internal/api
//
// The thread keeps growing, so after the first turns every turn reads a full
// history window; "no-window" configures none and shows what reading it costs.
func BenchmarkTurn(b *testing.B) {
	plain := []byte(`{"message":"Could you summarise the three main points of the article about loopback benchmarks and tell me which one matters most?"}`)
	withBlocks := []byte(`{"message":"Here are two sources.","content_blocks":[` +
		`{"type":"text","text":"See the attached report."},` +
		`{"type":"resource_link","uri":"https://example.com/report.pdf","name":"report.pdf","mimeType":"application/pdf","annotations":{"audience":["user"],"priority":0.5}}]}`)
	tests := []struct {
		name     string
		body     []byte
		noWindow bool
	}{
		{name: "plain", body: plain},
		{name: "blocks", body: withBlocks},
		{name: "plain-no-window", body: plain, noWindow: true},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			cfg := turn.DefaultConfig
			if tt.noWindow {
				cfg.HistoryWindow = 0
			}
			h := newBenchHandler(b, store.NewMemory(store.Options{}), cfg)
			path := "/v1/threads/" + mustBenchThread(b, h) + "/turns"
			// Fill the history window first, so every measured turn reads a
			// full window as on a thread in use.
			for range turn.DefaultConfig.HistoryWindow/2 + 1 {
				mustBenchTurn(b, h, path, tt.body)
			}
			b.ReportAllocs()
			for b.Loop() {
				mustBenchTurn(b, h, path, tt.body)
			}
		})
	}
}

// newBenchHandler returns chatd on st with the echo processor, turns
// configured by cfg, and no authentication.
func newBenchHandler(tb testing.TB, st api.Store, cfg turn.Config) http.Handler {
	tb.Helper()
	reg, err := processor.NewRegistry(map[string]processor.Processor{"echo": echo.New()}, "echo")
	require.NoError(tb, err)
	deps := newTestDeps(st, reg, cfg, nil)
	deps.Auth = api.AnonymousAuth{}
	return api.NewServer(deps)
}

// mustBenchThread creates an echo thread and returns its ID.
func mustBenchThread(tb testing.TB, h http.Handler) string {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/threads", bytes.NewReader([]byte(`{"processor":"echo"}`)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(tb, http.StatusCreated, rec.Code, rec.Body.String())
	var th struct {
		ID string `json:"id"`
	}
	require.NoError(tb, json.Unmarshal(rec.Body.Bytes(), &th))
	return th.ID
}

// mustBenchTurn posts one turn and fails unless it answers 200.
func mustBenchTurn(tb testing.TB, h http.Handler, path string, body []byte) {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("turn: status %d: %s", rec.Code, rec.Body.String())
	}
}
