package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
	"chatd/internal/store"
)

// gatedPipelines holds the first pipeline it sees until gate is closed,
// and counts the pipelines and the commands they carry.
type gatedPipelines struct {
	gate      chan struct{}
	first     atomic.Bool
	pipelines atomic.Int64
	cmds      atomic.Int64
}

func (*gatedPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*gatedPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *gatedPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.first.CompareAndSwap(false, true) {
			<-h.gate
		}
		h.pipelines.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestRedisAppendsShareRoundTrips: appends of many turns that arrive while
// one is on its way go together in the next pipeline, each answered on its
// own, and every turn's log holds its events in order; a server that lost
// its scripts is given them again without losing an append.
func TestRedisAppendsShareRoundTrips(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	st := store.NewRedis(client, testOpts)
	t.Cleanup(func() { _ = st.Close() })

	const turns = 40
	threads, turnIDs := make([]string, turns), make([]string, turns)
	for i := range turns {
		th := mustCreateThread(t, st)
		turn := newTestTurn("")
		_, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Window: 10, Turn: turn})
		require.NoError(t, err)
		threads[i], turnIDs[i] = th.ID, turn.ID
	}
	// The scripts are gone: the first pipeline's appends answer NOSCRIPT.
	require.NoError(t, client.ScriptFlush(ctx).Err())
	hook := &gatedPipelines{gate: make(chan struct{})}
	client.AddHook(hook)

	var wg sync.WaitGroup
	errs := make([]error, turns)
	appendTwo := func(i int) {
		defer wg.Done()
		errs[i] = st.AppendTurnEvents(ctx, threads[i], turnIDs[i], []store.TurnEvent{testEvent(2, "text.delta"), testEvent(3, "text.delta")})
	}
	wg.Add(1)
	go appendTwo(0) // on its way, held at the gate
	require.Eventually(t, func() bool { return hook.first.Load() }, time.Minute, time.Millisecond)
	for i := 1; i < turns; i++ {
		wg.Add(1)
		go appendTwo(i)
	}
	require.Eventually(t, func() bool { return st.QueuedAppends() == turns-1 }, time.Minute, time.Millisecond)
	close(hook.gate)
	wg.Wait()

	for i := range turns {
		require.NoError(t, errs[i], "turn %d", i)
		evs, _, err := st.TurnEvents(ctx, threads[i], alice, turnIDs[i], 0, 0)
		require.NoError(t, err)
		var ids []int
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		assert.Equal(t, []int{1, 2, 3}, ids, "turn %d: its start and both deltas, once each", i)
	}
	// The lone first append, answered NOSCRIPT and sent again once the
	// script was loaded, then the 39 that waited for it, together: three
	// pipelines carrying 1 + 1 + 39 appends.
	assert.Equal(t, int64(3), hook.pipelines.Load())
	assert.Equal(t, int64(turns+1), hook.cmds.Load())
}
