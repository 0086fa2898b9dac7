package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/blocks"
)

type wireThreadList struct {
	Threads    []wireThread `json:"threads"`
	NextBefore *string      `json:"next_before"`
}

func (ts *testServer) mustListThreads(tb testing.TB, as, query string) wireThreadList {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/v1/threads" + query, as: as})
	mustStatus(tb, resp, http.StatusOK)
	return mustDecode[wireThreadList](tb, resp.Body)
}

// TestListThreads: the caller's threads, most recently updated first, paged
// without repeats or gaps; a thread without a title shows its first words.
func TestListThreads(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		// Principals of this run alone: the Cluster and Sentinel set-ups
		// are shared by the package (and by repeated runs, -count=N).
		alice, bob := "list-a-"+blocks.NewID(), "list-b-"+blocks.NewID()
		var ids []string
		for range 5 {
			ids = append(ids, ts.mustCreateThread(t, alice, "echo"))
		}
		ts.mustCreateThread(t, bob, "echo")
		long := strings.Repeat("é", 100)
		ts.mustTurn(t, alice, ids[1], long)

		var listed []wireThread
		query := "?limit=2"
		for page := 0; ; page++ {
			require.Less(t, page, 5)
			list := ts.mustListThreads(t, alice, query)
			assert.LessOrEqual(t, len(list.Threads), 2)
			listed = append(listed, list.Threads...)
			if list.NextBefore == nil {
				break
			}
			query = "?limit=2&before=" + *list.NextBefore
		}
		require.Len(t, listed, 5)
		assert.Equal(t, ids[1], listed[0].ID, "the thread with the latest turn first")
		require.NotNil(t, listed[0].Title)
		assert.Equal(t, strings.Repeat("é", 80), *listed[0].Title, "the first 80 characters of the first message")
		assert.Nil(t, listed[1].Title, "no title and no message yet")
		for i := 1; i < len(listed); i++ {
			assert.False(t, listed[i].UpdatedAt.After(listed[i-1].UpdatedAt), "most recently updated first")
		}
		assert.Nil(t, ts.mustThread(t, alice, ids[1]).Title, "the thread itself has no title")

		assert.Len(t, ts.mustListThreads(t, bob, "").Threads, 1, "each principal lists their own")
		assert.Empty(t, ts.mustListThreads(t, "list-nobody-"+blocks.NewID(), "").Threads)

		for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?before=", "?before=bogus!", "?limit=1&limit=2"} {
			resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads" + q, as: alice})
			mustProblem(t, resp, http.StatusBadRequest, "invalid_request")
		}
	})
}

// TestPatchThread: title and metadata as a merge patch, limits refused with
// nothing changed, another principal's thread not found.
func TestPatchThread(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		patch := func(as, contentType, body string) *testResponse {
			return ts.do(t, testRequest{method: http.MethodPatch, path: "/v1/threads/" + thread, as: as,
				body: []byte(body), contentType: contentType})
		}

		resp := patch(alice, "application/merge-patch+json", `{"title":"Plans","metadata":{"project":"apollo","team":"a"}}`)
		mustStatus(t, resp, http.StatusOK)
		got := mustDecode[wireThread](t, resp.Body)
		assert.Equal(t, "Plans", *got.Title)
		assert.Equal(t, map[string]string{"project": "apollo", "team": "a"}, got.Metadata)

		resp = patch(alice, "application/json", `{"metadata":{"team":null,"stage":"b"}}`)
		mustStatus(t, resp, http.StatusOK)
		got = mustDecode[wireThread](t, resp.Body)
		assert.Equal(t, "Plans", *got.Title, "left out, left alone")
		assert.Equal(t, map[string]string{"project": "apollo", "stage": "b"}, got.Metadata)

		seventeen := `{"metadata":{` + strings.TrimSuffix(strings.Repeat(`"kXX":"v",`, 1), ",")
		for i := range 16 {
			seventeen += `,"k` + string(rune('a'+i)) + `":"v"`
		}
		seventeen += `}}`
		bad := []struct {
			name, body string
			status     int
			code       string
		}{
			{"title too long", `{"title":"` + strings.Repeat("x", 201) + `"}`, 422, "validation_failed"},
			{"empty title", `{"title":""}`, 422, "validation_failed"},
			{"too many keys", seventeen, 422, "validation_failed"},
			{"too many bytes", `{"metadata":{"big":"` + strings.Repeat("x", 4100) + `"}}`, 422, "validation_failed"},
			{"title a number", `{"title":5}`, 400, "invalid_request"},
			{"metadata values not strings", `{"metadata":{"a":1}}`, 400, "invalid_request"},
			{"metadata an array", `{"metadata":["a"]}`, 400, "invalid_request"},
			{"unknown field", `{"processor":"demo"}`, 400, "invalid_request"},
			{"malformed", `{"title":`, 400, "invalid_request"},
		}
		for _, tt := range bad {
			t.Run(tt.name, func(t *testing.T) {
				mustProblem(t, patch(alice, "", tt.body), tt.status, tt.code)
			})
		}
		got = ts.mustThread(t, alice, thread)
		assert.Equal(t, "Plans", *got.Title, "bad patches change nothing")
		assert.Equal(t, map[string]string{"project": "apollo", "stage": "b"}, got.Metadata)

		mustProblem(t, patch(bob, "", `{"title":"mine"}`), http.StatusNotFound, "not_found")
		mustProblem(t, patch(alice, "text/plain", `{"title":"x"}`), http.StatusUnsupportedMediaType, "unsupported_media_type")

		resp = patch(alice, "", `{"title":null,"metadata":null}`)
		mustStatus(t, resp, http.StatusOK)
		got = mustDecode[wireThread](t, resp.Body)
		assert.Nil(t, got.Title)
		assert.Empty(t, got.Metadata)
	})
}

// TestCORS: preflights from an allowed origin are answered with the
// headers a browser client needs; other origins get no grant; credentials
// are never allowed; with no origins configured CORS is off.
func TestCORS(t *testing.T) {
	ts := newTestServer(t, withConfig(func(c *api.Config) {
		c.CORSOrigins = []string{"http://app.example"}
		c.PrincipalHeader = principalHeader
	}))
	preflight := func(ts *testServer, origin string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, ts.URL+"/v1/threads/x/turns", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type, idempotency-key, last-event-id, "+strings.ToLower(principalHeader))
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	resp := preflight(ts, "http://app.example")
	assert.Less(t, resp.StatusCode, 300)
	assert.Equal(t, "http://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"content-type", "idempotency-key", "last-event-id", strings.ToLower(principalHeader)} {
		assert.Contains(t, allowed, h)
	}
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Credentials"))

	assert.Empty(t, preflight(ts, "http://evil.example").Header.Get("Access-Control-Allow-Origin"))

	req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/threads", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://app.example")
	req.Header.Set(principalHeader, alice)
	created, err := ts.Client().Do(req)
	require.NoError(t, err)
	created.Body.Close()
	assert.Equal(t, http.StatusCreated, created.StatusCode)
	assert.Equal(t, "http://app.example", created.Header.Get("Access-Control-Allow-Origin"))
	exposed := strings.ToLower(created.Header.Get("Access-Control-Expose-Headers"))
	for _, h := range []string{"location", "x-request-id", "retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"} {
		assert.Contains(t, exposed, h)
	}

	off := newTestServer(t)
	assert.Empty(t, preflight(off, "http://app.example").Header.Get("Access-Control-Allow-Origin"), "CORS off by default")
}
