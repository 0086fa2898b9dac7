package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistoryRenderHTML checks ?render=html: every message gains an html
// member, and is otherwise the record history serves without it.
func TestHistoryRenderHTML(t *testing.T) {
	ts := newTestServer(t)
	th := ts.mustCreateThread(t, "ana", "demo")
	ts.mustTurn(t, "ana", th, "card <b>please</b>")
	ts.mustTurn(t, "ana", th, "sources")

	plain := ts.mustHistoryRaw(t, "ana", th)
	resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + th + "/messages?limit=200&render=html", as: "ana"})
	mustStatus(t, resp, http.StatusOK)

	var want, got struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(plain, &want))
	require.NoError(t, json.Unmarshal(resp.Body, &got))
	require.Len(t, got.Messages, 4)
	var htmls []string
	for i, m := range got.Messages {
		var h string
		require.NoError(t, json.Unmarshal(m["html"], &h))
		htmls = append(htmls, h)
		delete(m, "html")
		assert.Equal(t, want.Messages[i], m, "message %d", i)
	}
	assert.Contains(t, htmls[0], "card &lt;b&gt;please&lt;/b&gt;")
	assert.Contains(t, htmls[1], `<article class="chatd-block chatd-entity">`)
	assert.Contains(t, htmls[3], `<ol class="chatd-sources">`)
}

func TestHistoryRenderBadValue(t *testing.T) {
	ts := newTestServer(t)
	th := ts.mustCreateThread(t, "ana", "echo")
	for _, q := range []string{"render=json", "render=", "render=html&render=html"} {
		resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + th + "/messages?" + q, as: "ana"})
		mustProblem(t, resp, http.StatusBadRequest, "invalid_request")
	}
}
