package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/store"
)

// TestMaxBlocks checks CHATD_MAX_BLOCKS: a message with more blocks is 422
// validation_failed on content_blocks, and nothing is kept.
func TestMaxBlocks(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.MaxBlocks = 3 }))
	thread := ts.mustCreateThread(t, alice, "echo")
	blocksOf := func(n int) string {
		list := make([]string, n)
		for i := range list {
			list[i] = fmt.Sprintf(`{"type":"text","text":"b%d"}`, i)
		}
		return `{"message":"hi","content_blocks":[` + strings.Join(list, ",") + `]}`
	}
	p := mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(blocksOf(4))}),
		http.StatusUnprocessableEntity, "validation_failed")
	assert.Equal(t, []string{"content_blocks"}, p.fields())
	assert.Empty(t, ts.mustHistory(t, alice, thread))

	resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(blocksOf(3))})
	mustStatus(t, resp, http.StatusOK)
}

// TestMaxJSONDepth checks CHATD_MAX_JSON_DEPTH on every endpoint that takes
// a body: deeper nesting is 400 invalid_request before anything is decoded.
func TestMaxJSONDepth(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.MaxJSONDepth = 5 }))
	thread := ts.mustCreateThread(t, alice, "echo")
	paused := ts.mustCreateThread(t, alice, "echo")
	pause := ts.mustPause(t, alice, paused, profileForm)

	nested := func(levels int) string { // levels of objects inside _meta's value
		return strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels)
	}
	for _, tc := range []struct {
		name, path, body string
	}{
		{"create", "/v1/threads", `{"processor":` + nested(5) + `}`},
		{"turn", turnPath(thread), `{"message":"hi","_meta":{"example.com/x":` + nested(4) + `}}`},
		{"answer", "/v1/threads/" + paused + "/elicitations/" + pause.Elicitation.id(),
			`{"action":"accept","content":{"name":"x"},"_meta":{"example.com/x":` + nested(4) + `}}`},
		{"any JSON, even unparsable", turnPath(thread), strings.Repeat("[", 6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: tc.path, as: alice, body: []byte(tc.body)}),
				http.StatusBadRequest, "invalid_request")
			assert.Contains(t, p.Detail, "nested deeper than 5")
		})
	}
	// Five levels are allowed.
	resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice,
		body: []byte(`{"message":"hi","_meta":{"example.com/x":` + nested(3) + `}}`)})
	mustStatus(t, resp, http.StatusOK)
	assert.Len(t, ts.mustHistory(t, alice, thread), 2)
}

// TestStoreFull checks CHATD_MEMORY_MAX_BYTES through the API: once the
// embedded store is full, new threads and turns are 507 store_full, reads
// still work, and deleting threads makes room.
func TestStoreFull(t *testing.T) {
	t.Parallel()
	opts := store.DefaultOptions
	opts.MemoryMaxBytes = 32 << 10
	st := store.NewMemory(opts)
	t.Cleanup(func() { _ = st.Close() })
	ts := newTestServer(t, withStore(st))

	var threads []string
	for {
		resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", as: alice, body: []byte(`{"processor":"echo"}`)})
		if resp.Status != http.StatusCreated {
			mustProblem(t, resp, http.StatusInsufficientStorage, "store_full")
			break
		}
		id := mustDecode[wireThread](t, resp.Body).ID
		threads = append(threads, id)
		resp = ts.do(t, testRequest{method: http.MethodPost, path: turnPath(id), as: alice,
			body: []byte(`{"message":"` + strings.Repeat("x", 2000) + `"}`)})
		if resp.Status != http.StatusOK {
			mustProblem(t, resp, http.StatusInsufficientStorage, "store_full")
			break
		}
		require.Less(t, len(threads), 100, "the store never filled")
	}
	mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: turnPath(threads[0]), as: alice, body: []byte(`{"message":"more"}`)}),
		http.StatusInsufficientStorage, "store_full")
	ts.mustHistory(t, alice, threads[0])

	for _, id := range threads[:4] {
		mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: "/v1/threads/" + id, as: alice}), http.StatusNoContent)
	}
	ts.mustCreateThread(t, alice, "echo")
}

// TestThreadQuota checks CHATD_MAX_THREADS through the API: 403
// quota_exceeded beyond it, and room again after a delete.
func TestThreadQuota(t *testing.T) {
	t.Parallel()
	opts := store.DefaultOptions
	opts.MaxThreads = 2
	st := store.NewMemory(opts)
	t.Cleanup(func() { _ = st.Close() })
	ts := newTestServer(t, withStore(st))
	first := ts.mustCreateThread(t, alice, "echo")
	ts.mustCreateThread(t, alice, "echo")
	mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", as: alice}), http.StatusForbidden, "quota_exceeded")
	ts.mustCreateThread(t, bob, "echo")
	mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: "/v1/threads/" + first, as: alice}), http.StatusNoContent)
	ts.mustCreateThread(t, alice, "echo")
}
