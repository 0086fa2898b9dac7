package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/blocks"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// eventsPath is a turn's reattach endpoint.
func eventsPath(threadID, turnID string) string {
	return "/v1/threads/" + threadID + "/turns/" + turnID + "/events"
}

// reattach opens a turn's event stream after lastEventID (none when < 0).
func (ts *testServer) reattach(tb testing.TB, as, threadID, turnID string, lastEventID int) (*sseStream, *testResponse) {
	tb.Helper()
	header := http.Header{}
	if lastEventID >= 0 {
		header.Set("Last-Event-ID", strconv.Itoa(lastEventID))
	}
	return ts.openStream(tb, testRequest{method: http.MethodGet, path: eventsPath(threadID, turnID), as: as, header: header})
}

// startOf decodes a message.start event.
func startOf(tb testing.TB, ev sseEvent) map[string]string {
	tb.Helper()
	require.Equal(tb, "message.start", ev.event)
	return mustDecode[map[string]string](tb, ev.data)
}

// TestReattach: a turn's events are replayed from the first or after
// Last-Event-ID, followed live until the turn ends, on another instance
// sharing the store, with the same IDs, names and data as the original
// stream; another principal gets 404.
func TestReattach(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		st := newTestStore(t, kind)
		first := newTestServer(t, withStore(st))
		second := newTestServer(t, withStore(st)) // another instance
		thread := first.mustCreateThread(t, alice, "echo")

		// Words spaced out so the reattach usually joins mid-turn; if the
		// machine is slow and the turn ends first, the replay must still be
		// the same events.
		orig := first.streamTurn(t, alice, thread, "/slow 150 one two three four")
		start := orig.nextEvent()
		turnID := startOf(t, start)["turn_id"]
		requireUUID(t, turnID)

		running := second.mustThread(t, alice, thread)
		if running.RunningTurn != nil {
			assert.Equal(t, turnID, running.RunningTurn.ID, "the thread shows its running turn")
		}

		live, resp := second.reattach(t, alice, thread, turnID, -1)
		require.Nil(t, resp)
		want := append([]sseEvent{start}, eventsOnly(orig.readAll())...)
		got := eventsOnly(live.readAll())
		assert.Equal(t, want, got, "reattached from the first event")
		require.Equal(t, "turn.completed", want[len(want)-1].event)
		for i, ev := range want {
			assert.Equal(t, strconv.Itoa(i+1), ev.id, "ids 1, 2, 3…")
		}

		after, resp := second.reattach(t, alice, thread, turnID, 2)
		require.Nil(t, resp)
		assert.Equal(t, want[2:], eventsOnly(after.readAll()), "after Last-Event-ID")

		done, resp := first.reattach(t, alice, thread, turnID, len(want))
		require.Nil(t, resp)
		assert.Empty(t, eventsOnly(done.readAll()), "nothing after the last event")

		assert.Nil(t, second.mustThread(t, alice, thread).RunningTurn, "no turn runs once it ended")

		_, resp = second.reattach(t, bob, thread, turnID, -1)
		mustProblem(t, resp, http.StatusNotFound, "not_found")
		_, resp = second.reattach(t, alice, thread, blocks.NewID(), -1)
		mustProblem(t, resp, http.StatusNotFound, "not_found")
		_, resp = second.reattach(t, alice, thread, "not-a-turn", -1)
		mustProblem(t, resp, http.StatusNotFound, "not_found")
		resp = second.do(t, testRequest{method: http.MethodGet, path: eventsPath(thread, turnID), as: alice,
			header: http.Header{"Last-Event-ID": {"two"}}})
		mustProblem(t, resp, http.StatusBadRequest, "invalid_request")
	})
}

// TestReattachJSONTurn: a turn answered as JSON logs what reattachment
// needs, its first and last events, whose data is what the JSON said.
func TestReattachJSONTurn(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		res := ts.mustTurn(t, alice, thread, "hello")
		requireUUID(t, res.TurnID)

		st, resp := ts.reattach(t, alice, thread, res.TurnID, -1)
		require.Nil(t, resp)
		evs := eventsOnly(st.readAll())
		require.Equal(t, []string{"message.start", "turn.completed"}, eventNames(evs))
		startData := startOf(t, evs[0])
		assert.Equal(t, map[string]string{"thread_id": thread, "turn_id": res.TurnID,
			"message_id": res.Message.ID, "user_message_id": res.UserMessage.ID}, startData)
		completed := mustDecode[wireTurnResult](t, evs[1].data)
		assert.Equal(t, res.Message, completed.Message)
		assert.Equal(t, "2", evs[1].id)
	})
}

// TestReattachFailedTurn: a failed turn's log ends with its error event.
func TestReattachFailedTurn(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	orig := ts.streamTurn(t, alice, thread, "/fail")
	evs := eventsOnly(orig.readAll())
	require.Equal(t, []string{"message.start", "error"}, eventNames(evs))

	st, resp := ts.reattach(t, alice, thread, startOf(t, evs[0])["turn_id"], -1)
	require.Nil(t, resp)
	assert.Equal(t, evs, eventsOnly(st.readAll()))
}

// TestReattachAfterEventsTTL: a turn's events are gone once
// CHATD_TURN_EVENTS_TTL has passed after it ended.
func TestReattachAfterEventsTTL(t *testing.T) {
	opts := testStoreOpts
	opts.TurnEventsTTL = 100 * time.Millisecond
	stores := map[string]api.Store{"memory": store.NewMemory(opts)}
	redisStore, err := store.OpenRedis(redistest.Start(t).URL(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = redisStore.Close() })
	stores["redis"] = redisStore
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t, withStore(st))
			thread := ts.mustCreateThread(t, alice, "echo")
			res := ts.mustTurn(t, alice, thread, "hello")
			waitFor(t, "the turn's events to expire", func() bool {
				resp := ts.do(t, testRequest{method: http.MethodGet, path: eventsPath(thread, res.TurnID), as: alice,
					header: http.Header{"Accept": {"text/event-stream"}}})
				return resp.Status == http.StatusNotFound
			})
			assert.Len(t, ts.mustHistory(t, alice, thread), 2, "the turn itself is kept")
		})
	}
}

// TestIdempotentStreamRetryResumes: a stream broken mid-turn and retried
// with the same Idempotency-Key and Last-Event-ID picks up the same turn —
// while it runs and after it ended — and never runs a second one.
func TestIdempotentStreamRetryResumes(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		body := mustJSON(t, map[string]string{"message": "/slow 150 one two three four"})
		post := func(lastEventID string) (*sseStream, *testResponse) {
			header := http.Header{"Idempotency-Key": {"retry-1"}}
			if lastEventID != "" {
				header.Set("Last-Event-ID", lastEventID)
			}
			return ts.openStream(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: body, header: header})
		}

		orig, resp := post("")
		require.Nil(t, resp)
		start := orig.nextEvent()
		orig.close() // the connection drops after the first event

		retry, resp := post("1")
		require.Nil(t, resp, "a retry with Last-Event-ID resumes, whether the turn still runs or has ended")
		rest := eventsOnly(retry.readAll())
		require.NotEmpty(t, rest)
		assert.Equal(t, "2", rest[0].id, "the retry resumes after Last-Event-ID")
		last := rest[len(rest)-1]
		require.Equal(t, "turn.completed", last.event)
		res := mustDecode[wireTurnResult](t, last.data)
		assert.Equal(t, startOf(t, start)["turn_id"], res.TurnID)
		assert.Equal(t, "one two three four", res.Message.Message)

		again, resp := post("3")
		require.Nil(t, resp)
		assert.Equal(t, rest[2:], eventsOnly(again.readAll()), "a later retry resumes from the log too")

		assert.Equal(t, int64(1), ts.echo.runs.Load(), "one turn ran")
		assert.Len(t, ts.mustHistory(t, alice, thread), 2)
	})
}
