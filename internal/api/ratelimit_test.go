package api_test

import (
	"net/http"
	"net/netip"
	"strconv"
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

func withRateLimit(rate ratelimit.Rate, counter ratelimit.Counter) serverOption {
	return withDeps(func(d *api.Deps) { d.RateLimit = ratelimit.New(rate, counter, nil) })
}

func mustRateHeaders(tb testing.TB, resp *testResponse, limit, remaining int) {
	tb.Helper()
	assert.Equal(tb, strconv.Itoa(limit), resp.Header.Get("RateLimit-Limit"))
	assert.Equal(tb, strconv.Itoa(remaining), resp.Header.Get("RateLimit-Remaining"))
	reset, err := strconv.Atoi(resp.Header.Get("RateLimit-Reset"))
	require.NoError(tb, err, "RateLimit-Reset")
	assert.True(tb, reset >= 0 && reset <= 3600, "RateLimit-Reset %d", reset)
}

// TestRateLimit checks CHATD_RATE_LIMIT: every /v1 response carries the
// RateLimit headers, and past the limit a principal gets 429 rate_limited
// with Retry-After while another principal is unaffected.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withRateLimit(ratelimit.Rate{N: 4, Per: time.Hour}, nil))

	resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", as: alice, body: []byte(`{"processor":"echo"}`)})
	mustStatus(t, resp, http.StatusCreated)
	mustRateHeaders(t, resp, 4, 3)
	thread := mustDecode[wireThread](t, resp.Body).ID

	resp = ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(`{"message":"hi"}`)})
	mustStatus(t, resp, http.StatusOK)
	mustRateHeaders(t, resp, 4, 2)
	resp = ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + uuid.NewString(), as: alice})
	mustProblem(t, resp, http.StatusNotFound, "not_found")
	mustRateHeaders(t, resp, 4, 1)
	resp = ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", as: alice})
	mustStatus(t, resp, http.StatusOK)
	mustRateHeaders(t, resp, 4, 0)

	for _, req := range []testRequest{
		{method: http.MethodGet, path: "/v1/processors", as: alice},
		{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(`{"message":"more"}`)},
		{method: http.MethodPost, path: "/v1/threads", as: alice},
	} {
		start := time.Now()
		resp = ts.do(t, req)
		// A refusal is held before it is answered, so a client retrying at
		// once cannot flood.
		assert.GreaterOrEqual(t, time.Since(start), api.DefaultConfig.RefusalDelay)
		mustProblem(t, resp, http.StatusTooManyRequests, "rate_limited")
		mustRateHeaders(t, resp, 4, 0)
		retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After")
		assert.True(t, retry >= 1 && retry <= 3600)
	}
	assert.Len(t, ts.mustHistory(t, bob, ts.mustCreateThread(t, bob, "echo")), 0, "bob has his own allowance")
	// Ops endpoints are not limited.
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/healthz"}), http.StatusOK)
}

// TestAuthFailLimit checks CHATD_AUTH_FAIL_LIMIT: past the limit of failed
// authentications an address gets 429 — even with a valid key, so keys
// cannot be guessed at speed.
func TestAuthFailLimit(t *testing.T) {
	t.Parallel()
	auth, err := api.NewAPIKeyAuth([]api.APIKey{{Principal: alice, Key: "right"}})
	require.NoError(t, err)
	ts := newTestServer(t, withAuth(auth), withDeps(func(d *api.Deps) {
		d.AuthFailLimit = ratelimit.New(ratelimit.Rate{N: 2, Per: time.Hour}, nil, nil)
	}))
	bearer := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", header: bearer("right")}), http.StatusOK)
	for i := range 2 {
		resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", header: bearer("guess")})
		mustProblem(t, resp, http.StatusUnauthorized, "unauthorized")
		mustRateHeaders(t, resp, 2, 1-i)
	}
	for _, key := range []string{"guess", "right"} {
		resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", header: bearer(key)})
		mustProblem(t, resp, http.StatusTooManyRequests, "rate_limited")
		assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	}
}

// TestAuthFailLimitBehindProxy checks CHATD_TRUSTED_PROXIES: from a
// trusted gateway, failed authentications count against the client its
// X-Forwarded-For names (the first address from the right that is not a
// trusted proxy), so one client's bad keys do not lock the gateway's other
// clients out; what a client prepends to the header changes nothing; and
// from a peer that is not trusted the header is ignored.
func TestAuthFailLimitBehindProxy(t *testing.T) {
	t.Parallel()
	auth, err := api.NewAPIKeyAuth([]api.APIKey{{Principal: alice, Key: "right"}})
	require.NoError(t, err)
	newServer := func(trusted ...string) *testServer {
		return newTestServer(t, withAuth(auth), withDeps(func(d *api.Deps) {
			d.AuthFailLimit = ratelimit.New(ratelimit.Rate{N: 3, Per: time.Hour}, nil, nil)
		}), withConfig(func(c *api.Config) {
			c.RefusalDelay = -1
			for _, p := range trusted {
				c.TrustedProxies = append(c.TrustedProxies, netip.MustParsePrefix(p))
			}
		}))
	}
	request := func(key string, forwarded ...string) testRequest {
		h := http.Header{"Authorization": {"Bearer " + key}}
		for _, f := range forwarded {
			h.Add("X-Forwarded-For", f)
		}
		return testRequest{method: http.MethodGet, path: "/v1/processors", header: h}
	}
	// The test client connects from 127.0.0.1: the gateway.
	ts := newServer("127.0.0.0/8", "10.0.0.0/8")
	steps := []struct {
		name      string
		forwarded []string
		// remaining is what the failure leaves the address it counted against.
		remaining int
	}{
		{"client A", []string{"203.0.113.7"}, 2},
		{"client A again, through a second trusted proxy", []string{"203.0.113.7, 10.1.2.3"}, 1},
		{"client A prepending an address of its choosing", []string{"198.51.100.1, 203.0.113.7"}, 0},
		{"client B, in a second header", []string{"192.0.2.1", "203.0.113.8"}, 2},
		{"an IPv6 client", []string{"2001:db8::1"}, 2},
		{"another host in its /64", []string{"2001:db8::2"}, 1},
		{"a link-local client with a zone", []string{"fe80::1%eth0"}, 2},
		{"the zone names an interface, not the client", []string{"fe80::7"}, 1},
		{"no header: the gateway itself", nil, 2},
		{"an entry that is not an address: the hop that reported it", []string{"203.0.113.7, not-an-ip"}, 1},
	}
	for _, step := range steps {
		resp := ts.do(t, request("guess", step.forwarded...))
		mustProblem(t, resp, http.StatusUnauthorized, "unauthorized")
		mustRateHeaders(t, resp, 3, step.remaining)
	}
	resp := ts.do(t, request("right", "203.0.113.7"))
	mustProblem(t, resp, http.StatusTooManyRequests, "rate_limited")
	mustStatus(t, ts.do(t, request("right", "203.0.113.8")), http.StatusOK)

	// Not trusted: every request counts against the peer whatever it forwards.
	direct := newServer("10.0.0.0/8")
	for i, forwarded := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
		resp := direct.do(t, request("guess", forwarded))
		mustProblem(t, resp, http.StatusUnauthorized, "unauthorized")
		mustRateHeaders(t, resp, 3, 2-i)
	}
	mustProblem(t, direct.do(t, request("right", "203.0.113.4")), http.StatusTooManyRequests, "rate_limited")
}

// TestRateLimitShared runs two servers — two instances — on one Redis: the
// limit holds for their sum.
func TestRateLimitShared(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	st := newTestRedisStore(t, rds)
	counter := st.(*store.Redis).RateCounter()
	rate := ratelimit.Rate{N: 40, Per: time.Hour}
	// This test counts refusals; holding each of its 60 would only slow it.
	atOnce := withConfig(func(c *api.Config) { c.RefusalDelay = -1 })
	one := newTestServer(t, withStore(st), withRateLimit(rate, counter), atOnce)
	two := newTestServer(t, withStore(st), withRateLimit(rate, counter), atOnce)
	admitted := 0
	for i := range 100 {
		ts := one
		if i%2 == 1 {
			ts = two
		}
		resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", as: alice})
		if resp.Status == http.StatusOK {
			admitted++
		} else {
			mustProblem(t, resp, http.StatusTooManyRequests, "rate_limited")
		}
	}
	// Allowance reserved by an instance and not spent is lost: at most a
	// block (a twentieth of the limit) per instance.
	assert.LessOrEqual(t, admitted, 40)
	assert.GreaterOrEqual(t, admitted, 40-2*2)
}

// TestRateLimitKeysDoNotCollide: a principal's request counts and a client
// address's failed authentications share one Redis counter but not its
// keys: a principal named like an address cannot spend that address's
// allowance of failures, nor the other way round.
func TestRateLimitKeysDoNotCollide(t *testing.T) {
	t.Parallel()
	st := newTestRedisStore(t, redistest.Start(t))
	counter := st.(*store.Redis).RateCounter()
	ts := newTestServer(t, withStore(st), withConfig(func(c *api.Config) { c.RefusalDelay = -1 }), withDeps(func(d *api.Deps) {
		d.RateLimit = ratelimit.New(ratelimit.Rate{N: 1000, Per: time.Hour}, counter, nil)
		d.AuthFailLimit = ratelimit.New(ratelimit.Rate{N: 3, Per: time.Hour}, counter, nil)
	}))
	// The principal's first request reserves a block of its allowance on
	// its key: 50 requests counted.
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", as: "127.0.0.1"}), http.StatusOK)
	// A failed authentication from 127.0.0.1 is the first of the address's.
	mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", as: nobody}), http.StatusUnauthorized, "unauthorized")
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", as: bob}), http.StatusOK)
}
