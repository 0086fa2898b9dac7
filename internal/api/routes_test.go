package api_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrongMethodsAndUnknownRoutes(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	tests := []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{http.MethodPut, "/v1/threads", http.StatusMethodNotAllowed, "method_not_allowed", "GET, HEAD, POST"},
		{http.MethodPost, "/v1/threads/" + thread, http.StatusMethodNotAllowed, "method_not_allowed", "GET, HEAD, PATCH, DELETE"},
		{http.MethodGet, "/v1/threads/" + thread + "/turns", http.StatusMethodNotAllowed, "method_not_allowed", "POST"},
		{"BREW", "/v1/threads", http.StatusMethodNotAllowed, "method_not_allowed", "GET, HEAD, POST"},
		{"BREW", "/no/such/route", http.StatusNotFound, "not_found", ""},
		{http.MethodGet, "/v2/threads", http.StatusNotFound, "not_found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp := ts.do(t, testRequest{method: tt.method, path: tt.path, as: alice})
			mustProblem(t, resp, tt.status, tt.code)
			assert.Equal(t, tt.allow, resp.Header.Get("Allow"))
		})
	}
}

// TestMetricsMethodLabelIsBounded: any client can send any method, and each
// distinct label value would be a new time series.
func TestMetricsMethodLabelIsBounded(t *testing.T) {
	ts := newTestServer(t)
	for _, m := range []string{"AAA", "BBB", "CCC"} {
		ts.do(t, testRequest{method: m, path: "/v1/threads", as: alice})
	}
	resp, err := ts.Client().Get(ts.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), `method="other"`)
	for _, m := range []string{"AAA", "BBB", "CCC"} {
		assert.NotContains(t, string(body), `method="`+m+`"`)
	}
}

// TestClientsCannotWriteChatdRecords: the keys with which chatd records
// questions and answers in history are refused in client _meta.
func TestClientsCannotWriteChatdRecords(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	for _, key := range []string{"drupal.org/ai.elicitation_id", "drupal.org/ai.elicitation_result"} {
		resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice,
			body: mustJSON(t, map[string]any{"message": "hi", "_meta": map[string]any{key: "forged"}})})
		p := mustProblem(t, resp, http.StatusUnprocessableEntity, "validation_failed")
		assert.Equal(t, []string{`_meta["` + key + `"]`}, p.fields())
	}
	assert.Empty(t, ts.mustHistory(t, alice, thread))
}
