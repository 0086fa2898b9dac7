package telemetry_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/trace"

	"chatd/internal/telemetry"
)

// receiver is an OTLP/HTTP traces endpoint that decodes what it is sent
// with the collector's own protobuf types.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	paths    []string
	requests []ptraceotlp.ExportRequest
}

func newReceiver(tb testing.TB) *receiver {
	tb.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if err == nil {
			err = req.UnmarshalProto(body)
		}
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.paths, rc.requests = append(rc.paths, r.URL.Path), append(rc.requests, req)
		rc.mu.Unlock()
		resp, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	tb.Cleanup(rc.Close)
	return rc
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestTracingOffWithoutEndpointOrExporter(t *testing.T) {
	for _, vars := range []map[string]string{{}, {"OTEL_SERVICE_NAME": "x"}, {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}} {
		p, err := telemetry.NewProvider(context.Background(), env(vars))
		require.NoError(t, err)
		assert.Nil(t, p.TracerProvider, "%v", vars)
		assert.NoError(t, p.Shutdown(context.Background()))
	}
}

func TestUnknownExporterOrProtocolIsAnError(t *testing.T) {
	_, err := telemetry.NewProvider(context.Background(), env(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}))
	assert.ErrorContains(t, err, `OTEL_TRACES_EXPORTER "zipkin"`)
	_, err = telemetry.NewProvider(context.Background(), env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}))
	assert.ErrorContains(t, err, `OTEL_EXPORTER_OTLP_PROTOCOL "http/json"`)
}

// The SDK reads the endpoint and service name from the process's
// environment; NewProvider is told the same through getenv.
func TestSpansReachAnOTLPReceiver(t *testing.T) {
	rc := newReceiver(t)
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.URL, "OTEL_SERVICE_NAME": "chatd-test", "OTEL_TRACES_SAMPLER": "always_on"}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	p, err := telemetry.NewProvider(context.Background(), env(vars))
	require.NoError(t, err)
	_, span := p.TracerProvider.Tracer("test").Start(context.Background(), "chatd.turn", trace.WithAttributes())
	span.End()
	require.NoError(t, p.Shutdown(context.Background()))

	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Len(t, rc.requests, 1)
	assert.Equal(t, "/v1/traces", rc.paths[0])
	rs := rc.requests[0].Traces().ResourceSpans()
	require.Equal(t, 1, rs.Len())
	name, ok := rs.At(0).Resource().Attributes().Get("service.name")
	require.True(t, ok)
	assert.Equal(t, "chatd-test", name.Str())
	spans := rs.At(0).ScopeSpans().At(0).Spans()
	require.Equal(t, 1, spans.Len())
	assert.Equal(t, "chatd.turn", spans.At(0).Name())
	assert.Equal(t, span.SpanContext().TraceID().String(), spans.At(0).TraceID().String())
}

func TestLogLinesCarryTheirTrace(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(telemetry.NewLogHandler(slog.NewTextHandler(&buf, nil))).With("k", "v")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	log.InfoContext(ctx, "traced")
	log.Info("untraced")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	assert.Contains(t, string(lines[0]), "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7")
	assert.NotContains(t, string(lines[1]), "trace_id")
}
