package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// TestRedisHoldOutlivesBusyPool: a running turn keeps its hold on its thread
// while every connection of the pool appends go through is taken. The main
// pool has one connection, held by a blocked command as thousands of
// streams' appends would hold it; the turn's appends then fail, but its
// lease renewals and its commit, on the hold client's pool, go through, and
// the lease renewed is the one Redis keeps.
func TestRedisHoldOutlivesBusyPool(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	main := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1, PoolTimeout: 50 * time.Millisecond, MaxRetries: -1})
	hold := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1})
	st := store.NewRedisClients(store.RedisClients{Main: main, Hold: hold}, testOpts)
	t.Cleanup(func() { _ = st.Close() })
	rdb := newServerClient(t, srv)

	th := mustCreateThread(t, st)
	turnID := blocks.NewID()
	start := store.TurnEvent{ID: 1, Name: "turn.start", Data: []byte(`{}`)}
	begun, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL,
		Turn: store.TurnBegin{ID: turnID, Start: start}})
	require.NoError(t, err)

	blocked := make(chan error, 1)
	go func() { blocked <- main.BLPop(context.Background(), 0, "test:unblock").Err() }()
	require.Eventually(t, func() bool {
		list, err := rdb.ClientList(ctx).Result()
		return err == nil && strings.Contains(list, "cmd=blpop")
	}, 10*time.Second, 10*time.Millisecond, "the main pool's one connection is held")

	err = st.AppendTurnEvents(ctx, th.ID, turnID, []store.TurnEvent{{ID: 2, Name: "text.delta", Data: []byte(`{"text":"a"}`)}})
	require.ErrorIs(t, err, store.ErrUnavailable, "appends wait for the main pool, which has nothing to give")

	const renewed = time.Hour
	for range 3 {
		require.NoError(t, st.RenewLock(ctx, th.ID, begun.LockToken, turnID, renewed))
	}
	ttl, err := rdb.PTTL(ctx, "chatd:{"+th.ID+"}:lock").Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, lockTTL, "the renewal reached Redis")

	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, TurnID: turnID, LockToken: begun.LockToken,
		Messages: newTestMessages(1, "kept"), Start: start}), "the commit keeps what the turn held")

	require.NoError(t, rdb.LPush(ctx, "test:unblock", "go").Err())
	require.NoError(t, <-blocked)
	page, err := st.History(ctx, th.ID, alice, 10, "")
	require.NoError(t, err)
	assert.Len(t, page.Messages, 1)
}
