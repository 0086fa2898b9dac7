package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/store"
)

// longTurn is an echo turn that streams a word every 50 ms for a minute
// unless it is stopped.
var longTurn = "/slow 50 " + strings.Repeat("w ", 1200)

// mustStop stops the thread's running turn and returns the stopped turn's ID.
func (ts *testServer) mustStop(tb testing.TB, as, threadID string, body string) string {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodPost, path: cancelPath(threadID), as: as, body: []byte(body)})
	mustStatus(tb, resp, http.StatusAccepted)
	got := mustDecode[struct {
		TurnID string `json:"turn_id"`
		Status string `json:"status"`
	}](tb, resp.Body)
	assert.Equal(tb, "stopping", got.Status)
	return got.TurnID
}

// readRest reads a stream whose first events were read already to its
// turn.completed, returning its result and the text of the deltas read.
func readRest(tb testing.TB, stream *sseStream) (wireTurnResult, string) {
	tb.Helper()
	var text strings.Builder
	for _, ev := range eventsOnly(stream.readAll()) {
		switch ev.event {
		case "text.delta":
			text.WriteString(mustDecode[struct {
				Delta string `json:"delta"`
			}](tb, ev.data).Delta)
		case "turn.completed":
			return mustDecode[wireTurnResult](tb, ev.data), text.String()
		default:
			tb.Fatalf("unexpected event %s: %s", ev.event, ev.data)
		}
	}
	tb.Fatal("the stream ended without turn.completed")
	return wireTurnResult{}, ""
}

// requireStopped checks a stopped turn's result and its place in history.
func requireStopped(tb testing.TB, ts *testServer, threadID string, res wireTurnResult, streamed string) {
	tb.Helper()
	assert.Equal(tb, "stopped", res.Status)
	assert.Equal(tb, true, res.Message.Meta[blocks.MetaStopped])
	assert.True(tb, strings.HasPrefix(res.Message.Message, streamed), "the streamed %q is a prefix of the kept %q", streamed, res.Message.Message)
	assert.Less(tb, len(res.Message.Message), len("a b")+len(longTurn), "the turn did not run to its end")
	history := ts.mustHistory(tb, alice, threadID)
	require.Len(tb, history, 2)
	assert.Equal(tb, res.Message.Message, history[1].Message)
	th := ts.mustThread(tb, alice, threadID)
	assert.Nil(tb, th.RunningTurn)
	assert.Nil(tb, th.PendingElicitation)
}

// TestStopStreamedTurn: a stop, on the instance running the turn or on
// another one sharing its store, ends the turn's stream with a stopped
// TurnResult that keeps the text streamed so far.
func TestStopStreamedTurn(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		st := newTestStore(t, kind)
		var relay = store.NewLocalBus()
		opts := []serverOption{withStore(st)}
		if kind == memoryStore {
			opts = append(opts, withRelay(relay))
		}
		running := newTestServer(t, opts...)
		other := newTestServer(t, opts...)
		for name, stopper := range map[string]*testServer{"same instance": running, "other instance": other} {
			t.Run(name, func(t *testing.T) {
				thread := running.mustCreateThread(t, alice, "echo")
				stream := running.streamTurn(t, alice, thread, longTurn)
				start := stream.nextEvent()
				require.Equal(t, "message.start", start.event)
				first := stream.nextEvent()
				require.Equal(t, "text.delta", first.event)
				turnID := mustDecode[struct {
					TurnID string `json:"turn_id"`
				}](t, start.data).TurnID
				assert.Equal(t, turnID, stopper.mustStop(t, alice, thread, ""))
				res, streamed := readRest(t, stream)
				assert.Equal(t, turnID, res.TurnID)
				requireStopped(t, running, thread, res, "w "+streamed)

				// Reattached, the turn reads the same.
				replay := running.mustStream(t, testRequest{method: http.MethodGet, path: eventsPath(thread, turnID), as: alice})
				again, _, _ := mustReadCompleted(t, replay, thread)
				assert.Equal(t, res, again)
			})
		}
		assert.NotEmpty(t, running.metricLine(t, `chatd_turns_total{processor="echo",status="stopped"}`))
	})
}

// TestStopJSONTurn: a JSON turn that is stopped answers 200 with its
// stopped TurnResult.
func TestStopJSONTurn(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	answered := make(chan *testResponse, 1)
	go func() { answered <- ts.postTurn(t, alice, thread, longTurn) }()
	waitFor(t, "the turn to run", func() bool { return ts.mustThread(t, alice, thread).RunningTurn != nil })
	ts.mustStop(t, alice, thread, `{"turn_id":"`+ts.mustThread(t, alice, thread).RunningTurn.ID+`"}`)
	resp := <-answered
	mustStatus(t, resp, http.StatusOK)
	requireStopped(t, ts, thread, mustDecode[wireTurnResult](t, resp.Body), "")
}

// TestStopOnDisconnect: a streamed turn that asked to stop on disconnect
// stops when its client leaves; one that did not runs on.
func TestStopOnDisconnect(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	stream := ts.mustStream(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice,
		body: mustJSON(t, map[string]any{"message": longTurn, "stop_on_disconnect": true})})
	require.Equal(t, "message.start", stream.nextEvent().event)
	require.Equal(t, "text.delta", stream.nextEvent().event)
	stream.close()
	waitFor(t, "the turn to stop", func() bool { return len(ts.mustHistory(t, alice, thread)) == 2 })
	history := ts.mustHistory(t, alice, thread)
	assert.Equal(t, true, history[1].Meta[blocks.MetaStopped])

	kept := ts.mustCreateThread(t, alice, "echo")
	stream = ts.streamTurn(t, alice, kept, "/slow 50 a b c d")
	require.Equal(t, "message.start", stream.nextEvent().event)
	stream.close()
	waitFor(t, "the turn to finish", func() bool { return len(ts.mustHistory(t, alice, kept)) == 2 })
	assert.Equal(t, "a b c d", ts.mustHistory(t, alice, kept)[1].Message)
}

// TestStopRefusals: a stop that cannot be done gets a clear 4xx and
// changes nothing.
func TestStopRefusals(t *testing.T) {
	ts := newTestServer(t)
	idle := ts.mustCreateThread(t, alice, "echo")
	busy := ts.mustCreateThread(t, alice, "echo")
	stream := ts.streamTurn(t, alice, busy, longTurn)
	start := stream.nextEvent()
	running := mustDecode[struct {
		TurnID string `json:"turn_id"`
	}](t, start.data).TurnID

	p := mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: cancelPath(idle), as: alice}), http.StatusConflict, "turn_not_running")
	assert.NotContains(t, string(mustJSON(t, p)), "running_turn_id")
	raw := ts.do(t, testRequest{method: http.MethodPost, path: cancelPath(busy), as: alice, body: []byte(`{"turn_id":"` + blocks.NewID() + `"}`)})
	mustProblem(t, raw, http.StatusConflict, "turn_not_running")
	assert.Equal(t, running, mustDecode[map[string]any](t, raw.Body)["running_turn_id"])

	for _, tc := range []struct {
		name   string
		req    testRequest
		status int
		code   string
	}{
		{"another principal", testRequest{method: http.MethodPost, path: cancelPath(busy), as: bob}, http.StatusNotFound, "not_found"},
		{"unknown thread", testRequest{method: http.MethodPost, path: cancelPath(blocks.NewID()), as: alice}, http.StatusNotFound, "not_found"},
		{"malformed thread ID", testRequest{method: http.MethodPost, path: cancelPath("nope"), as: alice}, http.StatusNotFound, "not_found"},
		{"malformed body", testRequest{method: http.MethodPost, path: cancelPath(busy), as: alice, body: []byte(`{"turn_id":`)}, http.StatusBadRequest, "invalid_request"},
		{"malformed turn ID", testRequest{method: http.MethodPost, path: cancelPath(busy), as: alice, body: []byte(`{"turn_id":"x"}`)}, http.StatusBadRequest, "invalid_request"},
		{"not JSON", testRequest{method: http.MethodPost, path: cancelPath(busy), as: alice, body: []byte(`x`), contentType: "text/plain"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"huge body", testRequest{method: http.MethodPost, path: cancelPath(busy), as: alice, body: []byte(`{"turn_id":"` + strings.Repeat("x", 2<<20) + `"}`)}, http.StatusRequestEntityTooLarge, "payload_too_large"},
		{"wrong method", testRequest{method: http.MethodGet, path: cancelPath(busy), as: alice}, http.StatusMethodNotAllowed, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustProblem(t, ts.do(t, tc.req), tc.status, tc.code)
		})
	}
	// None of it stopped the turn.
	thread := ts.mustThread(t, alice, busy)
	require.NotNil(t, thread.RunningTurn)
	assert.Equal(t, running, thread.RunningTurn.ID)
	ts.mustStop(t, alice, busy, "")
	res, _ := readRest(t, stream)
	assert.Equal(t, "stopped", res.Status)
}

// TestStopAsTurnEnds: stops racing the end of short turns give each turn
// one outcome, completed or stopped, which its answer, its mark and
// history agree on; no stop is a 500.
func TestStopAsTurnEnds(t *testing.T) {
	ts := newTestServer(t)
	for i := range 100 {
		thread := ts.mustCreateThread(t, alice, "echo")
		stream := ts.streamTurn(t, alice, thread, "/slow 1 a b c")
		require.Equal(t, "message.start", stream.nextEvent().event)
		resp := ts.do(t, testRequest{method: http.MethodPost, path: cancelPath(thread), as: alice})
		require.Contains(t, []int{http.StatusAccepted, http.StatusConflict}, resp.Status, "stop %d: %s", i, resp.Body)
		res, _ := readRest(t, stream)
		_, marked := res.Message.Meta[blocks.MetaStopped]
		assert.Equal(t, res.Status == "stopped", marked, "turn %d", i)
		if res.Status != "stopped" {
			assert.Equal(t, "completed", res.Status)
			assert.Equal(t, "a b c", res.Message.Message)
		}
		history := ts.mustHistory(t, alice, thread)
		require.Len(t, history, 2)
		assert.Equal(t, res.Message.Message, history[1].Message)
	}
}

// TestCancelPending: a turn with cancel_pending steers away from the
// pending question: the question is recorded as cancelled, the turn runs,
// and the question is consumed. Without it the turn is refused.
func TestCancelPending(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		paused := ts.mustPause(t, alice, thread, `/elicit {"message":"Ok?","requestedSchema":{"type":"object","properties":{}}}`)
		mustProblem(t, ts.postTurn(t, alice, thread, "other"), http.StatusConflict, "elicitation_pending")

		resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice,
			body: mustJSON(t, map[string]any{"message": "other", "cancel_pending": true})})
		mustStatus(t, resp, http.StatusOK)
		res := mustDecode[wireTurnResult](t, resp.Body)
		assert.Equal(t, "other", res.Message.Message)
		history := ts.mustHistory(t, alice, thread)
		require.Len(t, history, 5)
		assert.Equal(t, "Cancelled.", history[2].Message)
		assert.Equal(t, "cancel", history[2].Meta[blocks.MetaElicitationResult].(map[string]any)["action"])
		assert.Equal(t, res.UserMessage.ID, history[3].ID)
		mustProblem(t, ts.answer(t, alice, thread, paused.Elicitation.id(), map[string]any{"action": "accept"}),
			http.StatusConflict, "elicitation_consumed")
		assert.Nil(t, ts.mustThread(t, alice, thread).PendingElicitation)

		// With nothing pending the flag changes nothing.
		resp = ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice,
			body: mustJSON(t, map[string]any{"message": "again", "cancel_pending": true})})
		mustStatus(t, resp, http.StatusOK)
		assert.Len(t, ts.mustHistory(t, alice, thread), 7)
	})
}
