package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/turn"
)

// normalized decodes a TurnResult and replaces every UUID and timestamp, the
// values that differ between two runs of the same conversation.
func normalized(tb testing.TB, data []byte) any {
	tb.Helper()
	var v any
	require.NoError(tb, json.Unmarshal(data, &v))
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		case string:
			if _, err := uuid.Parse(v); err == nil && len(v) == 36 {
				return "<uuid>"
			}
			if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
				return "<time>"
			}
		}
		return v
	}
	return walk(v)
}

// mustCompletedStream reads a whole stream that must end in turn.completed,
// checking the event order, the ids and that the deltas add up to the reply.
func mustCompletedStream(tb testing.TB, st *sseStream, threadID string) (wireTurnResult, []byte) {
	tb.Helper()
	res, data, deltas := mustReadCompleted(tb, st, threadID)
	assert.Equal(tb, res.Message.Message, deltas, "the deltas must add up to the reply text")
	return res, data
}

// mustReadCompleted is mustCompletedStream returning the concatenated deltas
// instead of comparing them with the reply.
func mustReadCompleted(tb testing.TB, st *sseStream, threadID string) (wireTurnResult, []byte, string) {
	tb.Helper()
	events := eventsOnly(st.readAll())
	require.GreaterOrEqual(tb, len(events), 2, "events: %v", eventNames(events))
	for i, ev := range events {
		assert.Equal(tb, strconv.Itoa(i+1), ev.id, "event %d (%s)", i, ev.event)
	}
	require.Equal(tb, "message.start", events[0].event)
	last := events[len(events)-1]
	require.Equal(tb, "turn.completed", last.event, "events: %v", eventNames(events))
	var text strings.Builder
	for _, ev := range events[1 : len(events)-1] {
		require.Equal(tb, "text.delta", ev.event)
		var d struct {
			Delta string `json:"delta"`
		}
		require.NoError(tb, json.Unmarshal(ev.data, &d))
		text.WriteString(d.Delta)
	}
	start := mustDecode[struct {
		ThreadID  string `json:"thread_id"`
		MessageID string `json:"message_id"`
	}](tb, events[0].data)
	res := mustDecode[wireTurnResult](tb, last.data)
	assert.Equal(tb, threadID, start.ThreadID)
	assert.Equal(tb, threadID, res.ThreadID)
	assert.Equal(tb, res.Message.ID, start.MessageID)
	return res, last.data, text.String()
}

func TestStream(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))

		t.Run("same result as JSON", func(t *testing.T) {
			for _, c := range []struct {
				proc, message string
			}{
				{"echo", "/slow 0 the quick brown fox"},
				{"echo", "plain words"},
				{"echo", `/blocks [{"type":"text","text":"x","annotations":{"priority":0}}]`},
				{"demo", "Show me a card"},
				{"demo", "cite your sources"},
				{"demo", "stream a story"},
			} {
				t.Run(c.proc+" "+c.message, func(t *testing.T) {
					streamed := ts.mustCreateThread(t, alice, c.proc)
					st := ts.streamTurn(t, alice, streamed, c.message)
					assert.Equal(t, "text/event-stream", st.resp.Header.Get("Content-Type"))
					assert.Equal(t, "no-cache", st.resp.Header.Get("Cache-Control"))
					res, data, deltas := mustReadCompleted(t, st, streamed)
					assert.Equal(t, "completed", res.Status)
					assert.Equal(t, res.Message.Message, deltas, "the deltas must add up to the reply text")

					plain := ts.mustCreateThread(t, alice, c.proc)
					resp := ts.postTurn(t, alice, plain, c.message)
					mustStatus(t, resp, http.StatusOK)
					assert.Equal(t, normalized(t, resp.Body), normalized(t, data))

					// What was streamed is what history keeps.
					history := ts.mustHistory(t, alice, streamed)
					require.Len(t, history, 2)
					jsonEqual(t, res.UserMessage, history[0])
					jsonEqual(t, res.Message, history[1])
				})
			}
		})

		t.Run("elicitation round trip", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "demo")
			paused, _ := mustCompletedStream(t, ts.streamTurn(t, alice, thread, "book"), thread)
			assert.Equal(t, "input_required", paused.Status)
			require.NotNil(t, paused.Elicitation)
			require.NotNil(t, paused.ElicitationExpiresAt)
			eid := paused.Elicitation.id()
			assert.Equal(t, eid, ts.mustThread(t, alice, thread).PendingElicitation.id())

			st := ts.mustStream(t, testRequest{method: http.MethodPost, path: answerPath(thread, eid), as: alice,
				body: mustJSON(t, map[string]any{"action": "accept", "content": validBooking})})
			resumed, _ := mustCompletedStream(t, st, thread)
			assert.Equal(t, "completed", resumed.Status)
			require.Len(t, resumed.Message.ContentBlocks, 1)
			assert.Contains(t, resumed.Message.ContentBlocks[0]["_meta"], metaEntity)
			assert.Nil(t, ts.mustThread(t, alice, thread).PendingElicitation)
			assert.Len(t, ts.mustHistory(t, alice, thread), 4)
		})

		t.Run("failure", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			ts.mustTurn(t, alice, thread, "before")
			historyBefore := ts.mustHistoryRaw(t, alice, thread)

			events := eventsOnly(ts.streamTurn(t, alice, thread, "/fail").readAll())
			require.Equal(t, []string{"message.start", "error"}, eventNames(events))
			assert.Equal(t, "2", events[1].id)
			p := mustDecode[wireProblem](t, events[1].data)
			assert.Equal(t, "processor_failed", p.Code)
			assert.Equal(t, http.StatusBadGateway, p.Status)

			assert.JSONEq(t, string(historyBefore), string(ts.mustHistoryRaw(t, alice, thread)))
			ts.mustTurn(t, alice, thread, "after")
		})

		t.Run("errors before the stream are problems", func(t *testing.T) {
			thread, eid := mustDemoPause(t, ts, "book")
			sse := http.Header{"Accept": {"text/event-stream"}}
			for _, c := range []struct {
				req    testRequest
				status int
				code   string
			}{
				{testRequest{method: http.MethodPost, path: turnPath(uuid.NewString()), body: []byte(`{"message":"hi"}`)}, 404, "not_found"},
				{testRequest{method: http.MethodPost, path: turnPath(thread), body: []byte(`{"message":"hi"}`)}, 409, "elicitation_pending"},
				{testRequest{method: http.MethodPost, path: turnPath(thread), body: []byte(`{"message":`)}, 400, "invalid_request"},
				{testRequest{method: http.MethodPost, path: turnPath(thread), body: []byte(`{"message":"hi"}`), contentType: "text/plain"}, 415, "unsupported_media_type"},
				{testRequest{method: http.MethodPost, path: answerPath(thread, uuid.NewString()), body: []byte(`{"action":"cancel"}`)}, 404, "elicitation_not_found"},
				{testRequest{method: http.MethodPost, path: answerPath(thread, eid), body: []byte(`{"action":"decline","content":{"x":1}}`)}, 422, "validation_failed"},
			} {
				c.req.as, c.req.header = alice, sse
				st, resp := ts.openStream(t, c.req)
				require.Nil(t, st, "%s %s must not stream", c.req.method, c.req.path)
				mustProblem(t, resp, c.status, c.code)
			}

			// A busy thread answers 409 before any stream starts.
			busy := ts.mustCreateThread(t, alice, "echo")
			st := ts.streamTurn(t, alice, busy, "/slow 100 a b c")
			require.Equal(t, "message.start", st.nextEvent().event)
			second, resp := ts.openStream(t, testRequest{method: http.MethodPost, path: turnPath(busy), as: alice,
				body: []byte(`{"message":"hi"}`), header: sse})
			require.Nil(t, second)
			mustProblem(t, resp, http.StatusConflict, "thread_busy")
			rest := eventsOnly(st.readAll())
			require.NotEmpty(t, rest)
			assert.Equal(t, "turn.completed", rest[len(rest)-1].event)
		})

		t.Run("first delta arrives before the turn ends", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			st := ts.streamTurn(t, alice, thread, "/slow 200 w1 w2 w3 w4")
			require.Equal(t, "message.start", st.nextEvent().event)
			first := st.nextEvent()
			require.Equal(t, "text.delta", first.event)
			assert.JSONEq(t, `{"delta":"w1 "}`, string(first.data))
			// The turn is committed only when the processor has finished, so
			// an empty history proves the delta was not held back until then.
			assert.Empty(t, ts.mustHistory(t, alice, thread), "the first delta must arrive while the processor still runs")
			rest := eventsOnly(st.readAll())
			assert.Equal(t, []string{"text.delta", "text.delta", "text.delta", "turn.completed"}, eventNames(rest))
			assert.Len(t, ts.mustHistory(t, alice, thread), 2)
		})

		t.Run("thread deleted mid-turn", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			st := ts.streamTurn(t, alice, thread, "/slow 100 a b c")
			require.Equal(t, "message.start", st.nextEvent().event)
			mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: "/v1/threads/" + thread, as: alice}), http.StatusNoContent)
			rest := eventsOnly(st.readAll())
			require.NotEmpty(t, rest)
			last := rest[len(rest)-1]
			require.Equal(t, "error", last.event, "a turn on a deleted thread cannot complete")
			assert.Equal(t, "not_found", mustDecode[wireProblem](t, last.data).Code)
			mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + thread, as: alice}), http.StatusNotFound, "not_found")
		})

		t.Run("disconnect keeps the turn", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			st := ts.streamTurn(t, alice, thread, "/slow 100 a b c d e")
			require.Equal(t, "message.start", st.nextEvent().event)
			require.Equal(t, "text.delta", st.nextEvent().event)
			st.close()

			var history []wireMessage
			waitFor(t, "the abandoned turn to be persisted", func() bool {
				history = ts.mustHistory(t, alice, thread)
				return len(history) == 2
			})
			assert.Equal(t, "/slow 100 a b c d e", history[0].Message)
			assert.Equal(t, "a b c d e", history[1].Message)
			// Released, too.
			ts.mustTurn(t, alice, thread, "next")
		})
	})
}

func TestStreamHeartbeat(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.HeartbeatInterval = 10 * time.Millisecond }))
	thread := ts.mustCreateThread(t, alice, "echo")
	all := ts.streamTurn(t, alice, thread, "/slow 200 a b").readAll()
	heartbeats := 0
	for _, ev := range all {
		if ev.comment != "" {
			heartbeats++
			assert.Equal(t, "heartbeat", ev.comment)
		}
	}
	assert.Positive(t, heartbeats, "a 200ms quiet spell with a 10ms heartbeat must carry comments")
	events := eventsOnly(all)
	assert.Equal(t, []string{"message.start", "text.delta", "text.delta", "turn.completed"}, eventNames(events))
	// Heartbeats take no event ids.
	for i, ev := range events {
		assert.Equal(t, strconv.Itoa(i+1), ev.id)
	}
}

func TestStreamTimeout(t *testing.T) {
	t.Parallel()
	st := newTestStore(t, memoryStore)
	ts := newTestServer(t, withStore(st), withTurnConfig(func(c *turn.Config) { c.TurnTimeout = 300 * time.Millisecond }))
	// The turn after the failed one runs with the default timeout: it must
	// not race the machine's pace.
	long := newTestServer(t, withStore(st))
	thread := ts.mustCreateThread(t, alice, "echo")
	events := eventsOnly(ts.streamTurn(t, alice, thread, "/slow 1000 a b c").readAll())
	require.Equal(t, []string{"message.start", "text.delta", "error"}, eventNames(events))
	assert.Equal(t, "processor_failed", mustDecode[wireProblem](t, events[2].data).Code)
	assert.Empty(t, ts.mustHistory(t, alice, thread))
	long.mustTurn(t, alice, thread, "after")
}

// TestNegotiation checks how the Accept header picks JSON or a stream: a
// request that does not ask for text/event-stream gets JSON, and a media
// type refused with q=0 is not asked for.
func TestNegotiation(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	turn := func(accept string) *testResponse {
		return ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice,
			body: []byte(`{"message":"hi"}`), header: http.Header{"Accept": {accept}}})
	}

	for _, accept := range []string{"application/json", "*/*", "application/*", "application/json;q=0.5, text/html", "image/png"} {
		resp := turn(accept)
		mustStatus(t, resp, http.StatusOK)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), "Accept: %s", accept)
	}

	t.Run("stream refused with q=0", func(t *testing.T) {
		resp := turn("text/event-stream;q=0, application/json")
		mustStatus(t, resp, http.StatusOK)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	})
}
