package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/processor/echo"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/telemetry"
	"chatd/internal/turn"
)

// BenchmarkTracing measures an echo turn (row 2 of docs/performance.md)
// and a streamed echo turn (row 6b) on Redis with tracing off and with
// tracing on — every span sampled and exported over OTLP/HTTP to a
// receiver on loopback — in the same run, so their ratio is what tracing
// costs:
//
//	go test -run '^$' -bench BenchmarkTracing -benchmem ./internal/api
func BenchmarkTracing(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(receiver.Close)
	plain := []byte(`{"message":"Could you summarise the three main points of the article about loopback benchmarks and tell me which one matters most?"}`)
	streamed := []byte(`{"message":"/slow 0 ` + strings.Repeat("word ", 19) + `end"}`)
	rds := redistest.Start(b)
	for _, tracing := range []string{"off", "on"} {
		for _, tt := range []struct {
			name   string
			body   []byte
			accept string
		}{{"turn", plain, ""}, {"streamed", streamed, "text/event-stream"}} {
			b.Run(tt.name+"/tracing-"+tracing, func(b *testing.B) {
				st, err := store.OpenRedis(rds.URL(), store.Options{Trace: tracing == "on"})
				require.NoError(b, err)
				b.Cleanup(func() { _ = st.Close() })
				reg, err := processor.NewRegistry(map[string]processor.Processor{"echo": echo.New()}, "echo")
				require.NoError(b, err)
				deps := newTestDeps(st, reg, turn.DefaultConfig, nil)
				deps.Auth = api.AnonymousAuth{}
				if tracing == "on" {
					deps.TracerProvider = newBenchTracing(b, receiver.URL)
				}
				h := api.NewServer(deps)
				path := "/v1/threads/" + mustBenchThread(b, h) + "/turns"
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(tt.body))
					req.Header.Set("Content-Type", "application/json")
					if tt.accept != "" {
						req.Header.Set("Accept", tt.accept)
					}
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("turn: status %d: %s", rec.Code, rec.Body.String())
					}
				}
			})
		}
	}
}

// newBenchTracing returns a provider tracing every span to endpoint until
// the benchmark ends, built as cmd/chatd builds it from the same variables.
func newBenchTracing(b *testing.B, endpoint string) trace.TracerProvider {
	b.Helper()
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "always_on"}
	for k, v := range vars {
		b.Setenv(k, v)
	}
	p, err := telemetry.NewProvider(context.Background(), func(k string) string { return vars[k] })
	require.NoError(b, err)
	b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p.TracerProvider
}
