package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"chatd/internal/redistest"
)

// TestRunExportsTraces drives run with the OTEL_* variables pointing at an
// OTLP/HTTP receiver: the turn's spans arrive by the time run returns, and
// the request's log line carries its trace.
func TestRunExportsTraces(t *testing.T) {
	var mu sync.Mutex
	spans := map[string]string{} // name → trace ID
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if r.URL.Path != "/v1/traces" || req.UnmarshalProto(body) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		rs := req.Traces().ResourceSpans()
		for i := range rs.Len() {
			ss := rs.At(i).ScopeSpans()
			for j := range ss.Len() {
				for k := range ss.At(j).Spans().Len() {
					s := ss.At(j).Spans().At(k)
					spans[s.Name()] = s.TraceID().String()
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(receiver.Close)
	base, stop, logs := startRun(t, map[string]string{
		"CHATD_PROCESSORS": "echo", "CHATD_DEFAULT_PROCESSOR": "echo", "CHATD_REDIS_URL": redistest.Start(t).URL(),
		"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.URL, "OTEL_SERVICE_NAME": "chatd-e2e",
	})
	status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", `{"processor":"echo"}`, nil)
	require.Equal(t, http.StatusCreated, status)
	status, _ = mustDo(t, http.MethodPost, base+"/v1/threads/"+thread["id"].(string)+"/turns", `{"message":"hello"}`, nil)
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, stop())

	mu.Lock()
	defer mu.Unlock()
	traceID := spans["POST /v1/threads/{thread_id}/turns"]
	require.NotEmpty(t, traceID, "the turn request's span; got %v", spans)
	assert.Equal(t, traceID, spans["chatd.turn"])
	assert.Equal(t, traceID, spans["evalsha"], "a store round trip in the same trace; got %v", spans)

	var logged bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["route"] == "/v1/threads/{thread_id}/turns" {
			logged = true
			assert.Equal(t, traceID, entry["trace_id"])
		}
	}
	assert.True(t, logged, "the request's log line")
}
