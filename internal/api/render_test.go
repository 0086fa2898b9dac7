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

// stripHTML returns a message object's html member and the object without
// it, as it would be stored.
func stripHTML(tb testing.TB, raw json.RawMessage) (string, map[string]json.RawMessage) {
	tb.Helper()
	var m map[string]json.RawMessage
	require.NoError(tb, json.Unmarshal(raw, &m))
	var h string
	require.NoError(tb, json.Unmarshal(m["html"], &h), "html member")
	delete(m, "html")
	return h, m
}

// historyRecords returns the thread's stored messages by ID.
func historyRecords(tb testing.TB, ts *testServer, threadID string) map[string]map[string]json.RawMessage {
	tb.Helper()
	var page struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	require.NoError(tb, json.Unmarshal(ts.mustHistoryRaw(tb, "ana", threadID), &page))
	out := map[string]map[string]json.RawMessage{}
	for _, m := range page.Messages {
		var id string
		require.NoError(tb, json.Unmarshal(m["id"], &id))
		out[id] = m
	}
	return out
}

// TestTurnRenderHTML checks ?render=html on a turn, an answer, a streamed
// turn and the reattach stream: the TurnResult's messages gain html and are
// otherwise the records history keeps.
func TestTurnRenderHTML(t *testing.T) {
	ts := newTestServer(t)
	th := ts.mustCreateThread(t, "ana", "demo")

	check := func(t *testing.T, result []byte, wantInReply string) {
		t.Helper()
		var res map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(result, &res))
		stored := historyRecords(t, ts, th)
		userHTML, user := stripHTML(t, res["user_message"])
		replyHTML, reply := stripHTML(t, res["message"])
		var userID, replyID string
		require.NoError(t, json.Unmarshal(user["id"], &userID))
		require.NoError(t, json.Unmarshal(reply["id"], &replyID))
		assert.Equal(t, stored[userID], user)
		assert.Equal(t, stored[replyID], reply)
		assert.Contains(t, userHTML, `<div class="chatd-message chatd-user">`)
		assert.Contains(t, replyHTML, wantInReply)
		_, hasHTML := res["structured_response"]
		assert.True(t, hasHTML)
	}

	t.Run("json", func(t *testing.T) {
		resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(th) + "?render=html", as: "ana",
			body: mustJSON(t, map[string]string{"message": "card"})})
		mustStatus(t, resp, http.StatusOK)
		check(t, resp.Body, `<article class="chatd-block chatd-entity">`)
	})

	t.Run("answer", func(t *testing.T) {
		paused := ts.mustPause(t, "ana", th, "delete")
		resp := ts.do(t, testRequest{method: http.MethodPost, path: answerPath(th, paused.Elicitation.id()) + "?render=html", as: "ana",
			body: mustJSON(t, map[string]string{"action": "decline"})})
		mustStatus(t, resp, http.StatusOK)
		check(t, resp.Body, "Nothing was deleted.")
	})

	t.Run("stream and reattach", func(t *testing.T) {
		st := ts.mustStream(t, testRequest{method: http.MethodPost, path: turnPath(th) + "?render=html", as: "ana",
			body: mustJSON(t, map[string]string{"message": "sources"})})
		evs := eventsOnly(st.readAll())
		last := evs[len(evs)-1]
		require.Equal(t, "turn.completed", last.event)
		check(t, last.data, `<ol class="chatd-sources">`)

		var res struct {
			TurnID string `json:"turn_id"`
		}
		require.NoError(t, json.Unmarshal(last.data, &res))
		again := ts.mustStream(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + th + "/turns/" + res.TurnID + "/events?render=html", as: "ana"})
		replayed := eventsOnly(again.readAll())
		assert.Equal(t, string(last.data), string(replayed[len(replayed)-1].data))
	})

	t.Run("bad value runs nothing", func(t *testing.T) {
		before := ts.mustHistoryRaw(t, "ana", th)
		resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(th) + "?render=xml", as: "ana",
			body: mustJSON(t, map[string]string{"message": "card"})})
		mustProblem(t, resp, http.StatusBadRequest, "invalid_request")
		assert.Equal(t, string(before), string(ts.mustHistoryRaw(t, "ana", th)))
	})

	t.Run("without it nothing changes", func(t *testing.T) {
		res := ts.mustTurn(t, "ana", th, "help")
		raw := ts.postTurn(t, "ana", th, "help").Body
		assert.NotContains(t, string(raw), `"html"`)
		assert.NotEmpty(t, res.Message.ID)
	})
}
