package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
// receiver on loopback. The turns alternate between two servers, one with
// each, in blocks of 250, so both see the same machine in the same minute
// (Redis's latency on a shared machine varies more between runs than
// tracing costs); each traced block ends by flushing its spans, timed with
// it, so the export's work is not left to land in the next untraced block.
// on/off is tracing-on's throughput against tracing-off's, the figure to
// quote:
//
//	go test -run '^$' -bench BenchmarkTracing -benchtime 2000x -count 5 ./internal/api
func BenchmarkTracing(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(receiver.Close)
	plain := []byte(`{"message":"Could you summarise the three main points of the article about loopback benchmarks and tell me which one matters most?"}`)
	streamed := []byte(`{"message":"/slow 0 ` + strings.Repeat("word ", 19) + `end"}`)
	rds := redistest.Start(b)
	for _, tt := range []struct {
		name   string
		body   []byte
		accept string
	}{{"turn", plain, ""}, {"streamed", streamed, "text/event-stream"}} {
		b.Run(tt.name, func(b *testing.B) {
			tp := newBenchTracing(b, receiver.URL)
			flusher := tp.(interface{ ForceFlush(context.Context) error })
			off := newBenchTurns(b, rds.URL(), nil, tt.body, tt.accept)
			on := newBenchTurns(b, rds.URL(), tp, tt.body, tt.accept)
			const block = 250
			var offTime, onTime, flushTime time.Duration
			i := 0
			for b.Loop() {
				if (i/block)%2 == 0 {
					offTime += off(b)
				} else {
					onTime += on(b)
					if i%block == block-1 {
						t0 := time.Now()
						require.NoError(b, flusher.ForceFlush(context.Background()))
						onTime += time.Since(t0)
						flushTime += time.Since(t0)
					}
				}
				i++
			}
			if i < 2*block {
				b.Fatalf("%d turns: run at least %d (-benchtime %dx)", i, 2*block, 2*block)
			}
			offTurns, onTurns := countTurns(i, block)
			b.ReportMetric(float64(offTime.Nanoseconds())/float64(offTurns), "off-ns/turn")
			b.ReportMetric(float64(onTime.Nanoseconds())/float64(onTurns), "on-ns/turn")
			b.ReportMetric(float64(flushTime.Nanoseconds())/float64(onTurns), "flush-ns/turn")
			b.ReportMetric(float64(offTime)/float64(offTurns)/(float64(onTime)/float64(onTurns)), "on/off")
		})
	}
}

// countTurns splits n turns taken in alternating blocks, untraced first,
// into untraced and traced.
func countTurns(n, block int) (off, on int) {
	for i := range n {
		if (i/block)%2 == 0 {
			off++
		} else {
			on++
		}
	}
	return off, on
}

// newBenchTurns returns a function that posts body as a turn to a thread
// of its own on a server traced by tp (nil: tracing off) and returns how
// long the turn took.
func newBenchTurns(b *testing.B, redisURL string, tp trace.TracerProvider, body []byte, accept string) func(*testing.B) time.Duration {
	st, err := store.OpenRedis(redisURL, store.Options{Trace: tp != nil})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	reg, err := processor.NewRegistry(map[string]processor.Processor{"echo": echo.New()}, "echo")
	require.NoError(b, err)
	deps := newTestDeps(st, reg, turn.DefaultConfig, nil)
	deps.Auth = api.AnonymousAuth{}
	deps.TracerProvider = tp
	h := api.NewServer(deps)
	path := "/v1/threads/" + mustBenchThread(b, h) + "/turns"
	return func(b *testing.B) time.Duration {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(rec, req)
		took := time.Since(t0)
		if rec.Code != http.StatusOK {
			b.Fatalf("turn: status %d: %s", rec.Code, rec.Body.String())
		}
		return took
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
