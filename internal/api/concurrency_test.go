package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
	"chatd/internal/store"
)

// TestTwoInstances runs two chatd servers, each with its own Redis client, on
// one Redis: a turn paused on one is resumed on the other, and concurrent
// duplicate answers split across both are consumed exactly once.
func TestTwoInstances(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	a := newTestServer(t, withStore(newTestRedisStore(t, rds)))
	b := newTestServer(t, withStore(newTestRedisStore(t, rds)))

	thread := a.mustCreateThread(t, alice, "demo")
	paused := a.mustPause(t, alice, thread, "book")
	eid := paused.Elicitation.id()
	// B sees the pause A made.
	assert.Equal(t, eid, b.mustThread(t, alice, thread).PendingElicitation.id())
	resumed := b.mustAnswer(t, alice, thread, eid, map[string]any{"action": "accept", "content": validBooking})
	assert.Equal(t, "completed", resumed.Status)
	require.Len(t, resumed.Message.ContentBlocks, 1)
	assert.Nil(t, a.mustThread(t, alice, thread).PendingElicitation)

	// A second pause, answered 20 times at once across both instances.
	second := b.mustPause(t, alice, thread, "delete").Elicitation.id()
	const answers = 20
	responses := make([]*testResponse, answers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		ts := a
		if i%2 == 1 {
			ts = b
		}
		wg.Go(func() {
			<-start
			responses[i] = ts.answer(t, alice, thread, second, map[string]any{"action": "accept"})
		})
	}
	close(start)
	wg.Wait()

	wins := 0
	for _, resp := range responses {
		if resp.Status == http.StatusOK {
			wins++
			continue
		}
		// The losers see the winner's answer in progress (busy, retry) or
		// committed (consumed).
		p := mustDecode[wireProblem](t, resp.Body)
		require.Equal(t, http.StatusConflict, resp.Status, "body: %s", resp.Body)
		assert.Contains(t, []string{"thread_busy", "elicitation_consumed"}, p.Code)
	}
	assert.Equal(t, 1, wins)

	history := a.mustHistory(t, alice, thread)
	require.Len(t, history, 8, "book, question, answer, booking, delete, question, one answer, one reply")
	answered := 0
	for _, m := range history {
		if rec, ok := m.Meta[metaElicitationResult].(map[string]any); ok && rec["elicitation_id"] == second {
			answered++
		}
	}
	assert.Equal(t, 1, answered)
	assert.Equal(t, "assistant", history[7].Role)
	jsonEqual(t, history, b.mustHistory(t, alice, thread))
}

// TestConcurrentTurns: of concurrent turns on one thread exactly one runs;
// the others get thread_busy. The running turn is held open until every
// other answer is in, so the outcome does not depend on the machine's pace.
func TestConcurrentTurns(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		const turns = 10
		// gateProcessor (failover_test.go) holds each turn until its gate
		// opens.
		started, release := make(chan struct{}, turns+1), make(chan struct{})
		ts := newTestServer(t, withStoreKind(kind), withProcessor("gate", gateProcessor{started: started, gate: release}))
		thread := ts.mustCreateThread(t, alice, "gate")

		results := make(chan *testResponse, turns)
		for range turns {
			go func() { results <- ts.postTurn(t, alice, thread, "wait") }()
		}
		// Every turn but the one holding the thread answers at once.
		for range turns - 1 {
			mustProblem(t, <-results, http.StatusConflict, "thread_busy")
		}
		<-started // the one turn holding the thread reached its processor
		assert.Empty(t, started, "more than one turn ran at a time")
		close(release)
		last := <-results
		mustStatus(t, last, http.StatusOK)
		assert.Equal(t, "done", mustDecode[wireTurnResult](t, last.Body).Message.Message)

		history := ts.mustHistory(t, alice, thread)
		require.Len(t, history, 2)
		want := []struct{ role, text string }{{"user", "wait"}, {"assistant", "done"}}
		for i, w := range want {
			assert.Equal(t, w.role, history[i].Role, "message %d", i)
			assert.Equal(t, w.text, history[i].Message, "message %d", i)
		}
		// The lock is free again.
		ts.mustTurn(t, alice, thread, "after")
	})
}

// TestInvalidAnswersDoNotConsume sends one valid answer among concurrent
// invalid ones. An invalid answer leaves the elicitation pending (422), so
// it must never make the valid one look already answered: the valid answer
// resumes the turn every time.
func TestInvalidAnswersDoNotConsume(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		for round := range 5 {
			thread, eid := mustDemoPause(t, ts, "book")
			start := make(chan struct{})
			var wg sync.WaitGroup
			var valid *testResponse
			invalid := make([]*testResponse, 9)
			for i := range invalid {
				wg.Go(func() {
					<-start
					invalid[i] = ts.answer(t, alice, thread, eid, map[string]any{"action": "accept", "content": map[string]any{"title": ""}})
				})
			}
			wg.Go(func() {
				<-start
				valid = ts.answer(t, alice, thread, eid, map[string]any{"action": "accept", "content": validBooking})
			})
			close(start)
			wg.Wait()

			require.Equal(t, http.StatusOK, valid.Status, "round %d: the valid answer was refused: %s (still pending afterwards: %v)",
				round, valid.Body, ts.mustThread(t, alice, thread).PendingElicitation != nil)
			for _, resp := range invalid {
				// Before the valid answer commits an invalid one is refused
				// for its content; after, because the elicitation is gone.
				if resp.Status == http.StatusUnprocessableEntity {
					mustProblem(t, resp, http.StatusUnprocessableEntity, "validation_failed")
				} else {
					mustProblem(t, resp, http.StatusConflict, "elicitation_consumed")
				}
			}
			assert.Len(t, ts.mustHistory(t, alice, thread), 4)
		}
	})
}

// TestAbandonedLockExpires plays an instance that began a turn and died
// before committing it: the thread is busy until the turn timeout, then
// takes turns again.
func TestAbandonedLockExpires(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		const turnTimeout = 300 * time.Millisecond
		// The live instance runs its turns with the default timeout, so its
		// own turns never race the machine's pace; only the dead one's lock
		// is short.
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		began := time.Now()
		_, err := ts.store.BeginTurn(context.Background(), store.BeginTurn{ThreadID: thread, Principal: alice, LockTTL: turnTimeout})
		require.NoError(t, err)

		// Busy while the lock lives. A machine too slow to ask within the
		// lock's lifetime sees it expired already, which is the end state
		// checked below anyway.
		resp := ts.postTurn(t, alice, thread, "hi")
		if resp.Status == http.StatusOK {
			require.GreaterOrEqual(t, time.Since(began), turnTimeout, "a turn ran while another held the lock")
			assert.Len(t, ts.mustHistory(t, alice, thread), 2)
			return
		}
		mustProblem(t, resp, http.StatusConflict, "thread_busy")
		waitFor(t, "the dead instance's lock to expire", func() bool {
			resp := ts.postTurn(t, alice, thread, "hi")
			if resp.Status == http.StatusConflict {
				mustProblem(t, resp, http.StatusConflict, "thread_busy")
				return false
			}
			mustStatus(t, resp, http.StatusOK)
			return true
		})
		assert.Len(t, ts.mustHistory(t, alice, thread), 2)
	})
}
