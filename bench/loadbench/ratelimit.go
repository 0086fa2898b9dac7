package main

import (
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// benchRate is the limit of the rate-limited rows: high enough that no
// request of the run is refused, so they show what counting costs.
const benchRate = 1_000_000

// perRequestCounter is the least a rate limiter that counts every request
// on Redis costs (a library's Redis counter does at least this): one
// pipelined INCR and PEXPIRE, one round trip, before the request is served.
// Row 2p measures it beside chatd's own limiter (row 2r), which reserves a
// block of the allowance at a time and so skips that round trip for all
// but one request a block.
func perRequestCounter(rdb *redis.Client, limit int, window time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := "bench:rate:" + strconv.FormatInt(time.Now().Truncate(window).UnixMilli(), 10) + ":anonymous"
		var incr *redis.IntCmd
		_, err := rdb.Pipelined(r.Context(), func(p redis.Pipeliner) error {
			incr = p.Incr(r.Context(), key)
			p.PExpire(r.Context(), key, window+time.Minute)
			return nil
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if incr.Val() > int64(limit) {
			http.Error(w, "rate limited", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}
