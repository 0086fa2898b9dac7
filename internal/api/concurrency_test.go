package api_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
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
			responses[i] = ts.answer(t, alice, thread, second, map[string]any{"action": "accept", "content": map[string]any{"confirm": true}})
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
		mustProblem(t, resp, http.StatusConflict, "elicitation_consumed")
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

func TestConcurrentTurns(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		ts.mustTurn(t, alice, thread, "first")

		const turns = 10
		// Long enough that every request arrives while the first one runs.
		const slow = "/slow 250 a b c d"
		responses := make([]*testResponse, turns)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range turns {
			wg.Go(func() {
				<-start
				responses[i] = ts.postTurn(t, alice, thread, slow)
			})
		}
		close(start)
		wg.Wait()

		ok := 0
		for _, resp := range responses {
			if resp.Status == http.StatusOK {
				ok++
				res := mustDecode[wireTurnResult](t, resp.Body)
				assert.Equal(t, "a b c d", res.Message.Message)
				continue
			}
			mustProblem(t, resp, http.StatusConflict, "thread_busy")
		}
		assert.Equal(t, 1, ok)

		history := ts.mustHistory(t, alice, thread)
		require.Len(t, history, 4)
		want := []struct{ role, text string }{{"user", "first"}, {"assistant", "first"}, {"user", slow}, {"assistant", "a b c d"}}
		for i, w := range want {
			assert.Equal(t, w.role, history[i].Role, "message %d", i)
			assert.Equal(t, w.text, history[i].Message, "message %d", i)
		}
		// The lock is free again.
		ts.mustTurn(t, alice, thread, "after")
	})
}
