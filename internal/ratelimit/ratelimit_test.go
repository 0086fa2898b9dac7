package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
	"chatd/internal/store"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Rate{"600/1m": {600, time.Minute}, " 30 / 10s ": {30, 10 * time.Second}, "0": {}} {
		got, err := ParseRate(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "600", "x/1m", "-1/1m", "10/1ms", "10/often"} {
		_, err := ParseRate(bad)
		assert.Error(t, err, bad)
	}
}

// newTestClock returns a settable clock for l.
func newTestClock(l *Limiter, start time.Time) func(time.Duration) {
	var mu sync.Mutex
	now := start
	l.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	return func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
}

func TestLocalLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := New(Rate{N: 3, Per: time.Minute}, nil, nil)
	advance := newTestClock(l, time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC))

	for i := range 3 {
		d := l.Allow(ctx, "alice")
		require.True(t, d.Allowed, "request %d", i)
		assert.Equal(t, 3, d.Limit)
		assert.Equal(t, 2-i, d.Remaining)
		assert.Equal(t, 50, d.ResetSeconds())
	}
	d := l.Allow(ctx, "alice")
	assert.False(t, d.Allowed)
	assert.Equal(t, 0, d.Remaining)
	_, blocked := l.Blocked("alice")
	assert.True(t, blocked)
	assert.True(t, l.Allow(ctx, "bob").Allowed, "keys are counted apart")

	advance(50 * time.Second)
	assert.True(t, l.Allow(ctx, "alice").Allowed, "a new window starts over")
	_, blocked = l.Blocked("alice")
	assert.False(t, blocked)
}

// TestSharedLimit runs two limiters — two instances — on one Redis: they
// admit exactly the limit between them, and refuse the rest.
func TestSharedLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.OpenRedis(redistest.Start(t).URL(), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	rate := Rate{N: 100, Per: time.Hour}
	a, b := New(rate, st.RateCounter(), nil), New(rate, st.RateCounter(), nil)
	admitted := 0
	for i := range 300 {
		l := a
		if i%3 == 0 {
			l = b
		}
		if l.Allow(ctx, "alice").Allowed {
			admitted++
		}
	}
	// Unspent reserved allowance is lost, at most a block per instance.
	assert.LessOrEqual(t, admitted, 100)
	assert.GreaterOrEqual(t, admitted, 100-2*5)
	assert.True(t, a.Allow(ctx, "bob").Allowed)
	_, blocked := b.Blocked("alice")
	assert.True(t, blocked)
}

// TestCounterDownAdmits checks that an unreachable counter does not refuse
// requests: the limiter fails open.
func TestCounterDownAdmits(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	st, err := store.OpenRedis(rds.URL(), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	rds.Stop(t)
	l := New(Rate{N: 2, Per: time.Hour}, st.RateCounter(), nil)
	for range 5 {
		assert.True(t, l.Allow(context.Background(), "alice").Allowed)
	}
}
