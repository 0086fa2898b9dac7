package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
)

func TestTenancy(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread, eid := mustDemoPause(t, ts, "book")
		threadBefore := ts.mustThreadRaw(t, alice, thread)
		historyBefore := ts.mustHistoryRaw(t, alice, thread)

		tests := []struct {
			name string
			req  testRequest
		}{
			{"get thread", testRequest{method: http.MethodGet, path: "/v1/threads/" + thread}},
			{"delete thread", testRequest{method: http.MethodDelete, path: "/v1/threads/" + thread}},
			{"turn", testRequest{method: http.MethodPost, path: turnPath(thread), body: []byte(`{"message":"hi"}`)}},
			{"streamed turn", testRequest{method: http.MethodPost, path: turnPath(thread), body: []byte(`{"message":"hi"}`),
				header: http.Header{"Accept": {"text/event-stream"}}}},
			{"history", testRequest{method: http.MethodGet, path: "/v1/threads/" + thread + "/messages"}},
			{"answer", testRequest{method: http.MethodPost, path: answerPath(thread, eid),
				body: mustJSON(t, map[string]any{"action": "accept", "content": validBooking})}},
			{"cancel", testRequest{method: http.MethodPost, path: answerPath(thread, eid), body: []byte(`{"action":"cancel"}`)}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req := tt.req
				req.as = bob
				p := mustProblem(t, ts.do(t, req), http.StatusNotFound, "not_found")
				// Bob's answer is the one for a thread that does not exist.
				assert.Equal(t, "thread not found", p.Detail)
				assert.JSONEq(t, string(threadBefore), string(ts.mustThreadRaw(t, alice, thread)))
				assert.JSONEq(t, string(historyBefore), string(ts.mustHistoryRaw(t, alice, thread)))
			})
		}

		t.Run("no principal", func(t *testing.T) {
			for _, req := range []testRequest{
				{method: http.MethodGet, path: "/v1/processors"},
				{method: http.MethodPost, path: "/v1/threads"},
				{method: http.MethodGet, path: "/v1/threads/" + thread},
				{method: http.MethodPost, path: turnPath(thread), body: []byte(`{"message":"hi"}`)},
				{method: http.MethodPost, path: answerPath(thread, eid), body: []byte(`{"action":"cancel"}`)},
			} {
				mustProblem(t, ts.do(t, req), http.StatusUnauthorized, "unauthorized")
			}
			mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors",
				header: http.Header{principalHeader: {"has space"}}}), http.StatusUnauthorized, "unauthorized")
			assert.JSONEq(t, string(threadBefore), string(ts.mustThreadRaw(t, alice, thread)))
		})

		// Bob's own threads are his, and alice does not see them in hers.
		t.Run("bob's own thread", func(t *testing.T) {
			mine := ts.mustCreateThread(t, bob, "echo")
			ts.mustTurn(t, bob, mine, "hello")
			mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + mine, as: alice}),
				http.StatusNotFound, "not_found")
			mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: "/v1/threads/" + mine, as: bob}), http.StatusNoContent)
			mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + mine, as: bob}),
				http.StatusNotFound, "not_found")
		})

		// Alice's thread still works as before.
		res := ts.mustAnswer(t, alice, thread, eid, map[string]any{"action": "accept", "content": validBooking})
		assert.Equal(t, "completed", res.Status)
	})
}

func TestAPIKeyAuth(t *testing.T) {
	t.Parallel()
	auth, err := api.NewAPIKeyAuth([]api.APIKey{{Principal: "alice", Key: "k1"}, {Principal: "bob", Key: "k2"}})
	require.NoError(t, err)
	ts := newTestServer(t, withAuth(auth))
	bearer := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

	for name, h := range map[string]http.Header{
		"no credentials":  nil,
		"wrong key":       bearer("k3"),
		"empty bearer":    bearer(""),
		"other scheme":    {"Authorization": {"Basic azE6"}},
		"principal alone": {principalHeader: {"alice"}},
	} {
		t.Run(name, func(t *testing.T) {
			resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", header: h})
			mustProblem(t, resp, http.StatusUnauthorized, "unauthorized")
			assert.Equal(t, `Bearer realm="chatd"`, resp.Header.Get("WWW-Authenticate"))
		})
	}

	resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", header: bearer("k1")})
	mustStatus(t, resp, http.StatusOK)
	assert.Empty(t, resp.Header.Get("WWW-Authenticate"))

	// The key decides the principal: bob's key cannot read alice's thread.
	resp = ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", header: bearer("k1")})
	mustStatus(t, resp, http.StatusCreated)
	thread := mustDecode[wireThread](t, resp.Body).ID
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + thread, header: bearer("k1")}), http.StatusOK)
	mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + thread, header: bearer("k2")}),
		http.StatusNotFound, "not_found")

	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
		mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: path}), http.StatusOK)
	}
}

// TestAnswerToMissingThread checks that an answer to a thread the caller
// cannot see is 404 not_found whatever the elicitation ID looks like: the
// thread is looked up before the elicitation.
func TestAnswerToMissingThread(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	thread, _ := mustDemoPause(t, ts, "delete")
	for _, c := range []struct {
		name, as, thread string
	}{
		{"unknown thread", alice, uuid.NewString()},
		{"another principal's thread", bob, thread},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, eid := range []string{uuid.NewString(), "not-an-id"} {
				mustProblem(t, ts.answer(t, c.as, c.thread, eid, map[string]any{"action": "cancel"}),
					http.StatusNotFound, "not_found")
			}
		})
	}
}

func TestAPIKeyRotationAndConflicts(t *testing.T) {
	t.Parallel()
	auth, err := api.NewAPIKeyAuth([]api.APIKey{{Principal: "alice", Key: "old"}, {Principal: "alice", Key: "new"}})
	require.NoError(t, err)
	ts := newTestServer(t, withAuth(auth))
	resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", header: http.Header{"Authorization": {"Bearer old"}}})
	mustStatus(t, resp, http.StatusCreated)
	thread := mustDecode[wireThread](t, resp.Body).ID
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + thread,
		header: http.Header{"Authorization": {"Bearer new"}}}), http.StatusOK)

	_, err = api.NewAPIKeyAuth([]api.APIKey{{Principal: "alice", Key: "same"}, {Principal: "bob", Key: "same"}})
	assert.ErrorContains(t, err, "the same api key is given to alice and bob")
}

// TestHeaderPrincipalMustBeUTF8: two principals that differ only in bytes
// that are not UTF-8 would read, and log, as one: such a header is 401.
func TestHeaderPrincipalMustBeUTF8(t *testing.T) {
	ts := newTestServer(t)
	for _, p := range []string{"alice\xff", "alice\xfe", "\xc3"} {
		req, err := http.NewRequest(http.MethodGet, ts.URL+"/v1/threads", nil)
		require.NoError(t, err)
		req.Header[principalHeader] = []string{p}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%q", p)
	}
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads", as: "ana\u00efs"}), http.StatusOK)
}

// TestBodylessCreateContentType: a thread is created from an empty body
// with no content type, or a JSON one; a body-less request that names
// another type (a browser's cross-site simple request) is 415 and creates
// nothing.
func TestBodylessCreateContentType(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		contentType string
		status      int
	}{
		{"", http.StatusCreated},
		{"application/json", http.StatusCreated},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
	} {
		req := testRequest{method: http.MethodPost, path: "/v1/threads", as: bob, contentType: tc.contentType, noContentType: tc.contentType == ""}
		assert.Equal(t, tc.status, ts.do(t, req).Status, "%q", tc.contentType)
	}
	list := mustDecode[struct {
		Threads []json.RawMessage `json:"threads"`
	}](t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads", as: bob}).Body)
	assert.Len(t, list.Threads, 2)
}

// TestEveryResponseIsNosniff: no answer of chatd's is left for a browser
// to sniff into another type.
func TestEveryResponseIsNosniff(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	for _, r := range []testRequest{
		{method: http.MethodGet, path: "/v1/threads/" + thread, as: alice},
		{method: http.MethodGet, path: "/v1/threads/" + thread, as: bob},
		{method: http.MethodGet, path: "/v1/nope", as: alice},
		{method: http.MethodGet, path: "/healthz"},
		{method: http.MethodGet, path: "/metrics"},
		{method: http.MethodGet, path: "/openapi.yaml"},
		{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(`{"message":"hi"}`)},
	} {
		resp := ts.do(t, r)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "%s %s → %d", r.method, r.path, resp.Status)
	}
	stream := ts.streamTurn(t, alice, thread, "hi")
	assert.Equal(t, "nosniff", stream.resp.Header.Get("X-Content-Type-Options"))
}
