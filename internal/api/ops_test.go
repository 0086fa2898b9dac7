package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	chatd "chatd"
	"chatd/internal/redistest"
)

func TestOps(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)

	resp := ts.do(t, testRequest{method: http.MethodGet, path: "/healthz"})
	mustStatus(t, resp, http.StatusOK)
	assert.JSONEq(t, `{"status":"ok"}`, string(resp.Body))
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/readyz"}), http.StatusOK)

	resp = ts.do(t, testRequest{method: http.MethodGet, path: "/openapi.yaml"})
	mustStatus(t, resp, http.StatusOK)
	assert.Equal(t, chatd.OpenAPI, resp.Body)

	resp = ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", as: alice})
	mustStatus(t, resp, http.StatusOK)
	list := mustDecode[struct {
		Processors []struct{ Name, Description string }
		Default    string
	}](t, resp.Body)
	assert.Equal(t, "demo", list.Default)
	require.Len(t, list.Processors, 2)
	assert.Equal(t, "demo", list.Processors[0].Name)
	assert.Equal(t, "echo", list.Processors[1].Name)

	// Creating a thread without a body binds it to the default processor.
	resp = ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", as: alice})
	mustStatus(t, resp, http.StatusCreated)
	assert.Equal(t, "demo", mustDecode[wireThread](t, resp.Body).Processor)

	thread := ts.mustCreateThread(t, alice, "echo")
	created := ts.mustThread(t, alice, thread)
	ts.mustTurn(t, alice, thread, "hi")
	assert.True(t, ts.mustThread(t, alice, thread).UpdatedAt.After(created.UpdatedAt), "a turn refreshes updated_at")
	paused, eid := mustDemoPause(t, ts, "delete")
	ts.mustAnswer(t, alice, paused, eid, map[string]any{"action": "decline"})
	resp = ts.do(t, testRequest{method: http.MethodGet, path: "/metrics"})
	mustStatus(t, resp, http.StatusOK)
	metrics := string(resp.Body)
	for _, want := range []string{
		`chatd_turns_total{processor="echo",status="completed"} 1`,
		`chatd_turns_total{processor="demo",status="input_required"} 1`,
		`chatd_turns_total{processor="demo",status="completed"} 1`,
		`chatd_elicitations_total{event="created",processor="demo"} 1`,
		`chatd_elicitations_total{event="declined",processor="demo"} 1`,
		`chatd_http_request_duration_seconds_count{code="200",method="POST",route="/v1/threads/{thread_id}/turns"}`,
		`chatd_http_request_duration_seconds_bucket{code="201",method="POST",route="/v1/threads",le="+Inf"}`,
		`chatd_store_errors_total 0`,
		"go_gc_heap_live_bytes ",
		"go_memstats_heap_inuse_bytes ",
	} {
		assert.Contains(t, metrics, want)
	}

	t.Run("request id", func(t *testing.T) {
		resp := ts.do(t, testRequest{method: http.MethodGet, path: "/healthz", header: http.Header{"X-Request-ID": {"req-42.a:b"}}})
		assert.Equal(t, "req-42.a:b", resp.Header.Get("X-Request-ID"))
		// Errors carry it too, and a fresh one is minted when none or an
		// unsafe one is sent.
		resp = ts.do(t, testRequest{method: http.MethodGet, path: "/v1/nope", as: alice, header: http.Header{"X-Request-ID": {"abc"}}})
		mustProblem(t, resp, http.StatusNotFound, "not_found")
		assert.Equal(t, "abc", resp.Header.Get("X-Request-ID"))
		one := ts.do(t, testRequest{method: http.MethodGet, path: "/healthz"}).Header.Get("X-Request-ID")
		two := ts.do(t, testRequest{method: http.MethodGet, path: "/healthz", header: http.Header{"X-Request-ID": {"has space"}}}).Header.Get("X-Request-ID")
		requireUUID(t, one)
		requireUUID(t, two)
		assert.NotEqual(t, one, two)
	})
}

// TestReadyzRedis stops the Redis under a running server: /readyz and the
// API answer 503 store_unavailable, and recover once Redis is back.
func TestReadyzRedis(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	ts := newTestServer(t, withStore(newTestRedisStore(t, rds)))
	thread := ts.mustCreateThread(t, alice, "echo")
	ts.mustTurn(t, alice, thread, "before")
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/readyz"}), http.StatusOK)

	rds.Stop(t)
	mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/readyz"}), http.StatusServiceUnavailable, "store_unavailable")
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/healthz"}), http.StatusOK)
	for _, req := range []testRequest{
		{method: http.MethodPost, path: "/v1/threads", as: alice},
		{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(`{"message":"hi"}`)},
	} {
		p := mustProblem(t, ts.do(t, req), http.StatusServiceUnavailable, "store_unavailable")
		assert.NotContains(t, strings.ToLower(p.Detail), "dial", "no internals in a 5xx")
	}
	resp := ts.do(t, testRequest{method: http.MethodGet, path: "/metrics"})
	assert.NotContains(t, string(resp.Body), "chatd_store_errors_total 0")

	rds.Restart(t)
	waitFor(t, "readiness after Redis is back", func() bool {
		return ts.do(t, testRequest{method: http.MethodGet, path: "/readyz"}).Status == http.StatusOK
	})
	// The test Redis keeps no data across a restart, so recovery is shown
	// on a new thread.
	fresh := ts.mustCreateThread(t, alice, "echo")
	res := ts.mustTurn(t, alice, fresh, "after")
	assert.Equal(t, "after", res.Message.Message)
}
