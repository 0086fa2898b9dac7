package api_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/turn"
)

const (
	metaElicitationID     = "drupal.org/ai.elicitation_id"
	metaElicitationResult = "drupal.org/ai.elicitation_result"
	metaEntity            = "drupal.org/ai.entity"
)

// validBooking is an answer the demo's booking form accepts.
var validBooking = map[string]any{
	"title":     "Team sync",
	"date":      "2030-01-15",
	"attendees": 5,
	"room":      "Aurora",
	"email":     "alice@example.com",
	"notify":    false,
}

// mustPropertyNames returns the sorted property names of a requestedSchema.
func mustPropertyNames(tb testing.TB, schema map[string]any) []string {
	tb.Helper()
	props, ok := schema["properties"].(map[string]any)
	require.True(tb, ok, "requestedSchema.properties: %v", schema)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// jsonEqual asserts two values encode to the same JSON.
func jsonEqual(tb testing.TB, want, got any, msgAndArgs ...any) {
	tb.Helper()
	w, err := json.Marshal(want)
	require.NoError(tb, err)
	g, err := json.Marshal(got)
	require.NoError(tb, err)
	assert.JSONEq(tb, string(w), string(g), msgAndArgs...)
}

func TestRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "demo")

		// The turn pauses with the booking form.
		before := time.Now()
		paused := ts.mustPause(t, alice, thread, "Book an event")
		assert.Equal(t, thread, paused.ThreadID)
		form := paused.Elicitation
		eid := form.id()
		requireUUID(t, eid)
		assert.Equal(t, []string{"attendees", "date", "email", "notify", "room", "title"},
			mustPropertyNames(t, form.RequestedSchema))
		assert.Equal(t, "object", form.RequestedSchema["type"])
		props := form.RequestedSchema["properties"].(map[string]any)
		attendees := props["attendees"].(map[string]any)
		assert.Equal(t, "integer", attendees["type"])
		assert.EqualValues(t, 1, attendees["minimum"])
		assert.EqualValues(t, 50, attendees["maximum"])
		assert.Equal(t, "date", props["date"].(map[string]any)["format"])
		assert.Equal(t, "email", props["email"].(map[string]any)["format"])
		assert.Equal(t, "boolean", props["notify"].(map[string]any)["type"])
		assert.Len(t, props["room"].(map[string]any)["oneOf"], 3)
		assert.ElementsMatch(t, []any{"title", "date", "attendees", "room"}, form.RequestedSchema["required"])
		assert.NotContains(t, form.RequestedSchema, "mode")
		require.NotNil(t, paused.ElicitationExpiresAt)
		assert.True(t, paused.ElicitationExpiresAt.After(before), "expiry %s is not in the future", paused.ElicitationExpiresAt)
		// The paused message restates the question and names the elicitation.
		assert.Equal(t, "assistant", paused.Message.Role)
		assert.NotEmpty(t, paused.Message.Message)
		assert.Equal(t, eid, paused.Message.Meta[metaElicitationID])
		assert.Equal(t, eid, paused.StructuredResponse.Meta[metaElicitationID])

		// GET thread shows the same pending request.
		th := ts.mustThread(t, alice, thread)
		require.NotNil(t, th.PendingElicitation)
		jsonEqual(t, form, th.PendingElicitation)
		require.NotNil(t, th.PendingExpiresAt)
		assert.WithinDuration(t, *paused.ElicitationExpiresAt, *th.PendingExpiresAt, time.Millisecond)

		// An invalid answer names every bad field and leaves the form pending.
		historyBefore := ts.mustHistoryRaw(t, alice, thread)
		bad := ts.answer(t, alice, thread, eid, map[string]any{"action": "accept", "content": map[string]any{
			"title": "", "date": "next tuesday", "attendees": 0, "room": "Mars", "email": "nope", "colour": "red",
		}})
		p := mustProblem(t, bad, http.StatusUnprocessableEntity, "validation_failed")
		assert.Subset(t, p.fields(), []string{"title", "date", "attendees", "room", "email", "colour"})
		th = ts.mustThread(t, alice, thread)
		require.NotNil(t, th.PendingElicitation, "an invalid answer must leave the elicitation pending")
		assert.Equal(t, eid, th.PendingElicitation.id())
		assert.JSONEq(t, string(historyBefore), string(ts.mustHistoryRaw(t, alice, thread)))

		// A non-integral attendee count is also refused.
		frac := map[string]any{}
		for k, v := range validBooking {
			frac[k] = v
		}
		frac["attendees"] = 2.5
		p = mustProblem(t, ts.answer(t, alice, thread, eid, map[string]any{"action": "accept", "content": frac}),
			http.StatusUnprocessableEntity, "validation_failed")
		assert.Equal(t, []string{"attendees"}, p.fields())

		// The valid answer resumes the processor, which books the event.
		resumed := ts.mustAnswer(t, alice, thread, eid, map[string]any{"action": "accept", "content": validBooking})
		assert.Equal(t, "completed", resumed.Status)
		assert.Nil(t, resumed.Elicitation)
		assert.Nil(t, resumed.ElicitationExpiresAt)
		assert.Equal(t, "user", resumed.UserMessage.Role)
		assert.NotEmpty(t, resumed.UserMessage.Message, "the answer needs readable text")
		jsonEqual(t, map[string]any{"elicitation_id": eid, "action": "accept", "content": validBooking},
			resumed.UserMessage.Meta[metaElicitationResult])
		require.Len(t, resumed.Message.ContentBlocks, 1)
		card := resumed.Message.ContentBlocks[0]
		assert.Equal(t, "resource_link", card["type"])
		assert.True(t, strings.HasPrefix(card["uri"].(string), "entity:event/"), "uri %v", card["uri"])
		entity, ok := card["_meta"].(map[string]any)[metaEntity].(map[string]any)
		require.True(t, ok, "card _meta: %v", card["_meta"])
		assert.Equal(t, "event", entity["entity_type"])
		assert.Equal(t, "teaser", entity["view_mode"])
		assert.Equal(t, "entity:event/"+entity["id"].(string), card["uri"])
		requireUUID(t, entity["uuid"].(string))
		jsonEqual(t, resumed.Message.ContentBlocks, resumed.StructuredResponse.ContentBlocks)
		jsonEqual(t, resumed.Message.Meta, resumed.StructuredResponse.Meta)

		th = ts.mustThread(t, alice, thread)
		assert.Nil(t, th.PendingElicitation)
		assert.Nil(t, th.PendingExpiresAt)

		// History replays the whole exchange, in order, with distinct IDs.
		history := ts.mustHistory(t, alice, thread)
		require.Len(t, history, 4)
		wantIDs := []string{paused.UserMessage.ID, paused.Message.ID, resumed.UserMessage.ID, resumed.Message.ID}
		seen := map[string]bool{}
		for i, m := range history {
			assert.Equal(t, wantIDs[i], m.ID, "message %d", i)
			requireUUID(t, m.ID)
			assert.False(t, seen[m.ID], "duplicate id %s", m.ID)
			seen[m.ID] = true
		}
		assert.Equal(t, []string{"user", "assistant", "user", "assistant"},
			[]string{history[0].Role, history[1].Role, history[2].Role, history[3].Role})
		assert.Equal(t, "Book an event", history[0].Message)
		assert.Equal(t, eid, history[1].Meta[metaElicitationID])
		jsonEqual(t, resumed.UserMessage, history[2])
		jsonEqual(t, resumed.Message, history[3])
		jsonEqual(t, paused.Message, history[1])
		jsonEqual(t, paused.UserMessage, history[0])
		for i := 1; i < len(history); i++ {
			assert.Less(t, history[i-1].ID, history[i].ID, "IDs are time-ordered")
		}
	})
}

// mustDemoPause starts a demo thread paused on command.
func mustDemoPause(tb testing.TB, ts *testServer, command string) (thread, eid string) {
	tb.Helper()
	thread = ts.mustCreateThread(tb, alice, "demo")
	return thread, ts.mustPause(tb, alice, thread, command).Elicitation.id()
}

func TestElicitationOutcomes(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind), withTurnConfig(func(c *turn.Config) {
			c.ElicitationTTL = 300 * time.Millisecond
		}))
		longTS := newTestServer(t, withStoreKind(kind))

		t.Run("decline", func(t *testing.T) {
			thread, eid := mustDemoPause(t, longTS, "book")
			res := longTS.mustAnswer(t, alice, thread, eid, map[string]any{"action": "decline"})
			assert.Equal(t, "completed", res.Status)
			assert.Equal(t, "Declined.", res.UserMessage.Message)
			jsonEqual(t, map[string]any{"elicitation_id": eid, "action": "decline"}, res.UserMessage.Meta[metaElicitationResult])
			assert.Empty(t, res.Message.ContentBlocks)
			assert.Nil(t, longTS.mustThread(t, alice, thread).PendingElicitation)
			longTS.mustTurn(t, alice, thread, "help")
			assert.Len(t, longTS.mustHistory(t, alice, thread), 6)
		})

		t.Run("decline with empty content", func(t *testing.T) {
			thread, eid := mustDemoPause(t, longTS, "delete")
			res := longTS.mustAnswer(t, alice, thread, eid, map[string]any{"action": "decline", "content": map[string]any{}})
			jsonEqual(t, map[string]any{"elicitation_id": eid, "action": "decline"}, res.UserMessage.Meta[metaElicitationResult])
		})

		t.Run("cancel", func(t *testing.T) {
			thread, eid := mustDemoPause(t, longTS, "tags")
			res := longTS.mustAnswer(t, alice, thread, eid, map[string]any{"action": "cancel"})
			assert.Equal(t, "completed", res.Status)
			assert.Equal(t, "Cancelled.", res.UserMessage.Message)
			jsonEqual(t, map[string]any{"elicitation_id": eid, "action": "cancel"}, res.UserMessage.Meta[metaElicitationResult])
			assert.Nil(t, longTS.mustThread(t, alice, thread).PendingElicitation)
			longTS.mustTurn(t, alice, thread, "help")
		})

		t.Run("multi-select", func(t *testing.T) {
			thread, eid := mustDemoPause(t, longTS, "tags")
			p := mustProblem(t, longTS.answer(t, alice, thread, eid, map[string]any{"action": "accept",
				"content": map[string]any{"topics": []string{"blocks", "blocks"}}}), http.StatusUnprocessableEntity, "validation_failed")
			assert.Equal(t, []string{"topics"}, p.fields())
			res := longTS.mustAnswer(t, alice, thread, eid, map[string]any{"action": "accept",
				"content": map[string]any{"topics": []string{"blocks", "streaming"}}})
			assert.Equal(t, "completed", res.Status)
		})

		t.Run("pending blocks plain turns", func(t *testing.T) {
			thread, eid := mustDemoPause(t, longTS, "book")
			th := longTS.mustThread(t, alice, thread)
			historyBefore := longTS.mustHistoryRaw(t, alice, thread)
			p := mustProblem(t, longTS.postTurn(t, alice, thread, "help"), http.StatusConflict, "elicitation_pending")
			require.NotNil(t, p.Elicitation)
			assert.Equal(t, eid, p.Elicitation.id())
			jsonEqual(t, th.PendingElicitation, p.Elicitation)
			require.NotNil(t, p.ElicitationExpiresAt)
			assert.Equal(t, th.PendingExpiresAt.UTC(), p.ElicitationExpiresAt.UTC())
			assert.JSONEq(t, string(historyBefore), string(longTS.mustHistoryRaw(t, alice, thread)))
		})

		t.Run("answered twice", func(t *testing.T) {
			thread, eid := mustDemoPause(t, longTS, "delete")
			longTS.mustAnswer(t, alice, thread, eid, map[string]any{"action": "accept"})
			historyBefore := longTS.mustHistoryRaw(t, alice, thread)
			mustProblem(t, longTS.answer(t, alice, thread, eid, map[string]any{"action": "accept"}),
				http.StatusConflict, "elicitation_consumed")
			mustProblem(t, longTS.answer(t, alice, thread, eid, map[string]any{"action": "cancel"}),
				http.StatusConflict, "elicitation_consumed")
			assert.JSONEq(t, string(historyBefore), string(longTS.mustHistoryRaw(t, alice, thread)))
		})

		t.Run("unknown elicitation", func(t *testing.T) {
			thread, eid := mustDemoPause(t, longTS, "delete")
			mustProblem(t, longTS.answer(t, alice, thread, uuid.NewString(), map[string]any{"action": "cancel"}),
				http.StatusNotFound, "elicitation_not_found")
			// Another thread's elicitation is unknown here too.
			other := longTS.mustCreateThread(t, alice, "demo")
			mustProblem(t, longTS.answer(t, alice, other, eid, map[string]any{"action": "cancel"}),
				http.StatusNotFound, "elicitation_not_found")
			assert.Equal(t, eid, longTS.mustThread(t, alice, thread).PendingElicitation.id())
		})

		t.Run("expiry", func(t *testing.T) {
			thread, eid := mustDemoPause(t, ts, "book")
			waitFor(t, "the elicitation to expire", func() bool {
				return ts.mustThread(t, alice, thread).PendingElicitation == nil
			})
			historyBefore := ts.mustHistoryRaw(t, alice, thread)
			mustProblem(t, ts.answer(t, alice, thread, eid, map[string]any{"action": "accept", "content": validBooking}),
				http.StatusGone, "elicitation_expired")
			assert.JSONEq(t, string(historyBefore), string(ts.mustHistoryRaw(t, alice, thread)))
			// The thread takes turns again, and the expired ID stays expired.
			ts.mustTurn(t, alice, thread, "help")
			mustProblem(t, ts.answer(t, alice, thread, eid, map[string]any{"action": "cancel"}),
				http.StatusGone, "elicitation_expired")
		})
	})
}

// TestElicitationExpiryIsOneInstant checks that the paused TurnResult, the
// thread and the 409 elicitation_pending problem state the same expiry: a
// client comparing them must not see three different instants.
func TestElicitationExpiryIsOneInstant(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "demo")
		paused := ts.mustPause(t, alice, thread, "book")
		th := ts.mustThread(t, alice, thread)
		p := mustProblem(t, ts.postTurn(t, alice, thread, "help"), http.StatusConflict, "elicitation_pending")
		require.NotNil(t, paused.ElicitationExpiresAt)
		require.NotNil(t, th.PendingExpiresAt)
		require.NotNil(t, p.ElicitationExpiresAt)
		assert.Equal(t, th.PendingExpiresAt.UTC(), paused.ElicitationExpiresAt.UTC(), "TurnResult and thread disagree")
		assert.Equal(t, th.PendingExpiresAt.UTC(), p.ElicitationExpiresAt.UTC(), "problem and thread disagree")
	})
}

// TestBlocksRoundTrip sends a turn whose content is only blocks: history
// keeps them exactly, and echo replies with them.
func TestBlocksRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		const blocks = `[` +
			`{"type":"text","text":"","annotations":{"priority":0,"audience":["user"]}},` +
			`{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png","_meta":{"example.com/app.caption":"a pixel"}},` +
			`{"type":"resource_link","uri":"entity:node/42","name":"n42","size":0,"x-future":{"kept":true}},` +
			`{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"hello"}}` +
			`]`
		body := `{"message":"","content_blocks":` + blocks + `,"_meta":{"example.com/app.source":"mobile"}}`
		resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(body)})
		mustStatus(t, resp, http.StatusOK)
		res := mustDecode[wireTurnResult](t, resp.Body)

		wantBlocks := mustDecode[[]map[string]any](t, []byte(blocks))
		jsonEqual(t, wantBlocks, res.UserMessage.ContentBlocks)
		assert.Equal(t, "", res.UserMessage.Message)
		assert.Equal(t, map[string]any{"example.com/app.source": "mobile"}, res.UserMessage.Meta)
		jsonEqual(t, wantBlocks, res.Message.ContentBlocks)
		jsonEqual(t, wantBlocks, res.StructuredResponse.ContentBlocks)
		assert.Equal(t, map[string]any{}, res.StructuredResponse.Meta)

		history := ts.mustHistory(t, alice, thread)
		require.Len(t, history, 2)
		jsonEqual(t, wantBlocks, history[0].ContentBlocks)
		jsonEqual(t, wantBlocks, history[1].ContentBlocks)

		// A plain message is the exact five-field record.
		ts.mustTurn(t, alice, thread, "plain")
		raw := mustDecode[wirePageRaw](t, ts.mustHistoryRaw(t, alice, thread))
		require.Len(t, raw.Messages, 4)
		for _, m := range raw.Messages[2:] {
			assert.ElementsMatch(t, []string{"id", "parent_id", "role", "message", "timestamp"}, keysOf(m))
		}
	})
}

// wirePageRaw is a history page with its messages left as JSON objects.
type wirePageRaw struct {
	Messages []map[string]json.RawMessage `json:"messages"`
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestHistoryPaging(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		assert.Empty(t, ts.mustHistory(t, alice, thread))
		for i := range 5 {
			ts.mustTurn(t, alice, thread, "m"+strconv.Itoa(i))
		}
		all := ts.mustHistory(t, alice, thread)
		require.Len(t, all, 10)

		// Walk back three at a time: each page oldest first, pages newest first.
		var walked []wireMessage
		before := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 10, "paging does not end")
			path := "/v1/threads/" + thread + "/messages?limit=3"
			if before != "" {
				path += "&before=" + before
			}
			resp := ts.do(t, testRequest{method: http.MethodGet, path: path, as: alice})
			mustStatus(t, resp, http.StatusOK)
			page := mustDecode[wirePage](t, resp.Body)
			walked = append(page.Messages, walked...)
			if page.NextBefore == nil {
				break
			}
			assert.Equal(t, page.Messages[0].ID, *page.NextBefore)
			before = *page.NextBefore
		}
		jsonEqual(t, all, walked)

		// Default limit is 50; limit 1 is the newest message.
		resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + thread + "/messages?limit=1", as: alice})
		mustStatus(t, resp, http.StatusOK)
		page := mustDecode[wirePage](t, resp.Body)
		require.Len(t, page.Messages, 1)
		assert.Equal(t, all[9].ID, page.Messages[0].ID)
		require.NotNil(t, page.NextBefore)
	})
}

func TestDeleteThread(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread, eid := mustDemoPause(t, ts, "book")
		resp := ts.do(t, testRequest{method: http.MethodDelete, path: "/v1/threads/" + thread, as: alice})
		mustStatus(t, resp, http.StatusNoContent)
		assert.Empty(t, resp.Body)
		for _, req := range []testRequest{
			{method: http.MethodGet, path: "/v1/threads/" + thread},
			{method: http.MethodGet, path: "/v1/threads/" + thread + "/messages"},
			{method: http.MethodPost, path: turnPath(thread), body: []byte(`{"message":"hi"}`)},
			{method: http.MethodPost, path: answerPath(thread, eid), body: []byte(`{"action":"cancel"}`)},
			{method: http.MethodDelete, path: "/v1/threads/" + thread},
		} {
			req.as = alice
			mustProblem(t, ts.do(t, req), http.StatusNotFound, "not_found")
		}
	})
}

// TestAnswerMetaIsRecorded: the _meta a client sends with its answer stays on
// the recorded answer, beside the record of the result.
func TestAnswerMetaIsRecorded(t *testing.T) {
	ts := newTestServer(t)
	thread, eid := mustDemoPause(t, ts, "delete")
	resumed := ts.mustAnswer(t, alice, thread, eid, map[string]any{
		"action": "decline", "_meta": map[string]any{"example.com/ui.source": "dialog"},
	})
	assert.Equal(t, "dialog", resumed.UserMessage.Meta["example.com/ui.source"])
	assert.Contains(t, resumed.UserMessage.Meta, "drupal.org/ai.elicitation_result")
	history := ts.mustHistory(t, alice, thread)
	require.Len(t, history, 4)
	assert.Equal(t, resumed.UserMessage.Meta, history[2].Meta)
}
