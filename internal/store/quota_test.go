package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/redistest"
)

// TestQuotaDropsDeadThreads: an owner's index that still lists threads gone
// from Redis (expired, or deleted by an instance that crashed before
// unlisting them) does not hold the quota once they are older than
// quotaGrace; one listed more recently counts, since its create may still
// be on its way.
func TestQuotaDropsDeadThreads(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	st := NewRedis(redis.NewClient(&redis.Options{Addr: srv.Addr()}), Options{MaxThreads: 2})
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	owner := "quota-" + blocks.NewID()
	create := func() (string, error) {
		id := blocks.NewID()
		return id, st.CreateThread(ctx, Thread{ID: id, Owner: owner, Processor: "echo"})
	}
	list := func(id string, at time.Time) {
		require.NoError(t, rdb.ZAdd(ctx, ownerKey(owner), redis.Z{Score: float64(at.UnixMilli()), Member: id}).Err())
	}

	long := time.Now().Add(-2 * quotaGrace)
	list(blocks.NewID(), long)
	list(blocks.NewID(), long)
	first, err := create()
	require.NoError(t, err, "two dead threads hold no quota")
	listed, err := rdb.ZRange(ctx, ownerKey(owner), 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{first}, listed, "the dead are unlisted")

	list(blocks.NewID(), time.Now())
	_, err = create()
	assert.True(t, errors.Is(err, ErrQuotaExceeded), "a thread listed a moment ago counts: %v", err)
}
