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

// TestQuotaRefusalCost: a create refused at the quota costs the same store
// work whether the principal owns 40 threads or ten times as many — commands
// Redis runs (those scripts call included) and bytes it sends back — even
// when every thread is old enough to be checked.
func TestQuotaRefusalCost(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	const small, large, refusals = 40, 400, 5

	cost := func(threads int) redistest.Work {
		st := NewRedis(redis.NewClient(&redis.Options{Addr: srv.Addr()}), Options{MaxThreads: threads})
		defer func() { _ = st.Close() }()
		owner := "quota-" + blocks.NewID()
		old := time.Now().Add(-2 * quotaGrace)
		for range threads {
			require.NoError(t, st.CreateThread(ctx, Thread{ID: blocks.NewID(), Owner: owner, Processor: "echo", CreatedAt: old, UpdatedAt: old}))
		}
		refuse := func() {
			err := st.CreateThread(ctx, Thread{ID: blocks.NewID(), Owner: owner, Processor: "echo"})
			require.ErrorIs(t, err, ErrQuotaExceeded)
		}
		refuse() // loads the scripts and warms the pool
		before := srv.Work(t)
		for range refusals {
			refuse()
		}
		w := srv.Work(t).Sub(before)
		return redistest.Work{Commands: w.Commands / refusals, ReplyBytes: w.ReplyBytes / refusals}
	}
	smallCost, largeCost := cost(small), cost(large)
	t.Logf("per refusal: %d threads: %+v; %d threads: %+v", small, smallCost, large, largeCost)
	// The samples of the smaller index overlap more (fewer distinct threads
	// to check): that is all that may differ.
	assert.LessOrEqual(t, largeCost.Commands, smallCost.Commands+2*quotaSample, "commands per refusal")
	assert.LessOrEqual(t, largeCost.ReplyBytes, smallCost.ReplyBytes+2*quotaSample*64, "reply bytes per refusal")
}
