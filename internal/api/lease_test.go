package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// slowTurn is an echo turn that streams 30 words 150 ms apart: four and a
// half seconds, several leases of the tests below.
var slowTurn = `{"message":"/slow 150 ` + strings.TrimSpace(strings.Repeat("w ", 30)) + `"}`

// testLease is short enough to outlast several times in a test, and long
// enough that a loaded machine renews it in time (every third of it).
const testLease = time.Second

// TestLeaseRenewedWhileTurnRuns: a turn longer than several leases keeps its
// thread (another turn meanwhile is 409 thread_busy) and commits.
func TestLeaseRenewedWhileTurnRuns(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind), withTurnConfig(func(c *turn.Config) { c.LockLease = testLease }))
		thread := ts.mustCreateThread(t, alice, "echo")
		stream := ts.mustStream(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(slowTurn)})
		require.Equal(t, "message.start", stream.nextEvent().event)
		require.Equal(t, "text.delta", stream.nextEvent().event)
		// Past two leases the turn still holds the thread.
		time.Sleep(2 * testLease)
		mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(`{"message":"x"}`)}),
			http.StatusConflict, "thread_busy")
		events := eventsOnly(stream.readAll())
		require.NotEmpty(t, events)
		assert.Equal(t, "turn.completed", events[len(events)-1].event)
		assert.Len(t, ts.mustHistory(t, alice, thread), 2)
	})
}

// TestLeaseLostCommitRefused: when a turn's lease is lost and another turn
// takes the thread, the first turn is stopped and its commit refused — 503,
// nothing of it persisted — while the taker's turn is kept.
func TestLeaseLostCommitRefused(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	ts := newTestServer(t, withStore(newTestRedisStore(t, rds)), withTurnConfig(func(c *turn.Config) { c.LockLease = testLease }))
	thread := ts.mustCreateThread(t, alice, "echo")

	stream := ts.mustStream(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(slowTurn)})
	require.Equal(t, "message.start", stream.nextEvent().event)
	require.Equal(t, "text.delta", stream.nextEvent().event)
	// The lock vanishes as it would when a restarted Redis lost it; another
	// turn takes the thread.
	_, err := rds.Do(context.Background(), "DEL", "chatd:{"+thread+"}:lock")
	require.NoError(t, err)
	taker := ts.mustTurn(t, alice, thread, "taker")
	assert.Equal(t, "taker", taker.Message.Message)

	var last sseEvent
	for _, ev := range eventsOnly(stream.readAll()) {
		last = ev
	}
	require.Equal(t, "error", last.event, "the first turn ends in an error")
	p := mustDecode[wireProblem](t, last.data)
	assert.Equal(t, http.StatusServiceUnavailable, p.Status)
	assert.Equal(t, "store_unavailable", p.Code)
	history := ts.mustHistory(t, alice, thread)
	require.Len(t, history, 2, "only the taker's turn is kept")
	assert.Equal(t, "taker", history[0].Message)
}

// TestLapsedClaimAnswerable: an answer's claim whose lease lapses unfinished
// (its instance died) leaves the elicitation answerable; while it is live,
// another answer gets 409 thread_busy, never elicitation_consumed.
func TestLapsedClaimAnswerable(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, kind storeKind) {
		st := newTestStore(t, kind)
		ts := newTestServer(t, withStore(st), withTurnConfig(func(c *turn.Config) { c.LockLease = testLease }))
		thread := ts.mustCreateThread(t, alice, "echo")
		pause := ts.mustPause(t, alice, thread, profileForm)
		eid := pause.Elicitation.id()

		// A claim taken by an instance that then died: begun, never renewed.
		_, err := st.BeginResume(context.Background(), beginResume(thread, alice, eid, testLease))
		require.NoError(t, err)
		answer := map[string]any{"action": "accept", "content": map[string]any{"name": "Ana"}}
		mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: answerPath(thread, eid), as: alice, body: mustJSON(t, answer)}),
			http.StatusConflict, "thread_busy")
		var resp *testResponse
		waitFor(t, "the lapsed claim to free the elicitation", func() bool {
			resp = ts.do(t, testRequest{method: http.MethodPost, path: answerPath(thread, eid), as: alice, body: mustJSON(t, answer)})
			return resp.Status == http.StatusOK
		})
		mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: answerPath(thread, eid), as: alice, body: mustJSON(t, answer)}),
			http.StatusConflict, "elicitation_consumed")
	})
}

func beginResume(threadID, principal, elicitationID string, lease time.Duration) store.BeginResume {
	return store.BeginResume{ThreadID: threadID, Principal: principal, ElicitationID: elicitationID, LockTTL: lease}
}
