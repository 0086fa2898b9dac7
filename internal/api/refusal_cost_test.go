package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/ratelimit"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// TestRefusalsCostTheSame: on Redis, a create refused at the thread quota,
// a rate-limited request and a 401 cost the store the same work whether
// the principal owns 30 threads or ten times as many (all old enough for a
// refused create to check them).
func TestRefusalsCostTheSame(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const refusals = 10
	type costs struct{ create, limited, unauthorized redistest.Work }

	cost := func(threads int) costs {
		opts := testStoreOpts
		opts.MaxThreads = threads
		st, err := store.OpenRedis(srv.URL(), opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		principal, key := "p-"+uuid.NewString(), uuid.NewString()
		old := time.Now().Add(-2 * time.Hour)
		for range threads {
			require.NoError(t, st.CreateThread(context.Background(), store.Thread{
				ID: uuid.NewString(), Owner: principal, Processor: "echo", CreatedAt: old, UpdatedAt: old}))
		}
		auth, err := api.NewAPIKeyAuth([]api.APIKey{{Principal: principal, Key: key}})
		require.NoError(t, err)
		noDelay := withConfig(func(c *api.Config) { c.RefusalDelay = -1 })
		unlimited := newTestServer(t, withStore(st), withAuth(auth), noDelay)
		limited := newTestServer(t, withStore(st), withAuth(auth), noDelay, withDeps(func(d *api.Deps) {
			d.RateLimit = ratelimit.New(ratelimit.Rate{N: 1, Per: time.Hour}, st.RateCounter(), nil)
			d.AuthFailLimit = ratelimit.New(ratelimit.Rate{N: 10 * refusals, Per: time.Hour}, st.RateCounter(), nil)
		}))
		bearer := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }
		create := testRequest{method: http.MethodPost, path: "/v1/threads", header: bearer(key), body: []byte(`{"processor":"echo"}`)}

		measure := func(ts *testServer, req testRequest, status int, code string) redistest.Work {
			mustProblem(t, ts.do(t, req), status, code) // warms the pool and loads the scripts
			before := srv.Work(t)
			for range refusals {
				mustProblem(t, ts.do(t, req), status, code)
			}
			w := srv.Work(t).Sub(before)
			return redistest.Work{Commands: w.Commands / refusals, ReplyBytes: w.ReplyBytes / refusals}
		}
		var c costs
		c.create = measure(unlimited, create, http.StatusForbidden, "quota_exceeded")
		list := testRequest{method: http.MethodGet, path: "/v1/threads?limit=1", header: bearer(key)}
		mustStatus(t, limited.do(t, list), http.StatusOK) // the one request the limit allows
		c.limited = measure(limited, list, http.StatusTooManyRequests, "rate_limited")
		c.unauthorized = measure(limited, testRequest{method: http.MethodGet, path: "/v1/threads?limit=1", header: bearer("wrong")}, http.StatusUnauthorized, "unauthorized")
		return c
	}
	small, large := cost(30), cost(300)
	t.Logf("per refusal, 30 threads: %+v; 300 threads: %+v", small, large)
	for _, c := range []struct {
		name         string
		small, large redistest.Work
	}{
		{"refused create", small.create, large.create},
		{"rate-limited request", small.limited, large.limited},
		{"401", small.unauthorized, large.unauthorized},
	} {
		// A refused create checks a sample of the owner's threads, which
		// overlaps itself more in a smaller index: 16 commands at most.
		assert.LessOrEqual(t, c.large.Commands, c.small.Commands+16, "%s: commands", c.name)
		assert.LessOrEqual(t, c.large.ReplyBytes, c.small.ReplyBytes+1024, "%s: reply bytes", c.name)
	}
}
