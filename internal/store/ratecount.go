package store

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RateCounter counts requests in Redis for the rate limits every instance
// shares (internal/ratelimit).
type RateCounter struct {
	client redis.UniversalClient
}

// RateCounter returns the request counter of the instances sharing r's
// Redis, on r's client: closing r ends it.
func (r *Redis) RateCounter() *RateCounter { return &RateCounter{client: r.client} }

// AddRequests adds deltas[i] to the request count of keys[i] in the window
// starting at window, and returns the new totals. Counts expire after ttl.
// The keys sit outside any thread's hash tag, one command each, so a
// pipeline sends them all in one round trip on a single node and spreads
// them over the shards of a Cluster. It returns ErrUnavailable when Redis
// cannot serve.
func (r *RateCounter) AddRequests(ctx context.Context, window time.Time, ttl time.Duration, keys []string, deltas []int64) ([]int64, error) {
	prefix := "chatd:rate:" + strconv.FormatInt(window.UnixMilli(), 10) + ":"
	cmds := make([]*redis.IntCmd, len(keys))
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keys {
			cmds[i] = p.IncrBy(ctx, prefix+key, deltas[i])
			p.PExpire(ctx, prefix+key, ttl)
		}
		return nil
	})
	if err != nil {
		return nil, wrapRedisError("count requests", err)
	}
	totals := make([]int64, len(keys))
	for i, c := range cmds {
		totals[i] = c.Val()
	}
	return totals, nil
}
