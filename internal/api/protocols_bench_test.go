package api_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"chatd/internal/store"
	"chatd/internal/turn"
)

// BenchmarkStreamedTurn measures one streamed echo turn (twenty words, one
// delta each) natively (Accept: text/event-stream) and over each frontend
// protocol, through the whole handler stack on the embedded store, in
// process. The protocols' cost over the native stream is their mapping of
// the same turn events:
//
//	go test -run '^$' -bench BenchmarkStreamedTurn -benchmem ./internal/api
func BenchmarkStreamedTurn(b *testing.B) {
	text := "/slow 0 " + strings.Repeat("word ", 19) + "end"
	tests := []struct {
		name   string
		path   func(thread string) string
		body   func(thread string) []byte
		accept string
	}{
		{
			name: "native-sse", accept: "text/event-stream",
			path: func(thread string) string { return "/v1/threads/" + thread + "/turns" },
			body: func(string) []byte { return []byte(`{"message":"` + text + `"}`) },
		},
		{
			name: "ai-sdk",
			path: func(string) string { return "/v1/ai-sdk/chat" },
			body: func(thread string) []byte {
				return []byte(`{"id":"` + thread + `","trigger":"submit-message","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"` + text + `"}]}]}`)
			},
		},
		{
			name: "ag-ui",
			path: func(string) string { return "/v1/ag-ui" },
			body: func(thread string) []byte {
				return []byte(`{"threadId":"` + thread + `","runId":"r1","messages":[{"id":"m1","role":"user","content":"` + text + `"}]}`)
			},
		},
		{
			name: "deep-chat", accept: "text/event-stream",
			path: func(string) string { return "/v1/deep-chat" },
			body: func(thread string) []byte {
				return []byte(`{"messages":[{"role":"user","text":"` + text + `"}],"thread_id":"` + thread + `"}`)
			},
		},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			h := newBenchHandler(b, store.NewMemory(store.Options{}), turn.DefaultConfig)
			thread := mustBenchThread(b, h)
			path, body := tt.path(thread), tt.body(thread)
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if tt.accept != "" {
					req.Header.Set("Accept", tt.accept)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte("error")) {
					b.Fatalf("turn: status %d: %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
}
