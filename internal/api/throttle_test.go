package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLogThrottle(t *testing.T) {
	t.Parallel()
	th := &logThrottle{interval: time.Second}
	t0 := time.Unix(1000, 0)
	type step struct {
		at             time.Duration
		wantOK         bool
		wantSuppressed int
	}
	for i, s := range []step{
		{0, true, 0},
		{100 * time.Millisecond, false, 0},
		{999 * time.Millisecond, false, 0},
		{time.Second, true, 2},
		{1500 * time.Millisecond, false, 0},
		{5 * time.Second, true, 1},
		{6 * time.Second, true, 0},
	} {
		ok, suppressed := th.allow(t0.Add(s.at))
		assert.Equal(t, s.wantOK, ok, "step %d", i)
		assert.Equal(t, s.wantSuppressed, suppressed, "step %d", i)
	}
}

// TestHoldRefusal: a refusal waits out RefusalDelay unless its client
// leaves, and once MaxHeldRefusals wait, the next is answered at once.
func TestHoldRefusal(t *testing.T) {
	s := &Server{cfg: Config{RefusalDelay: time.Hour}, heldRefusals: make(chan struct{}, 1)}
	ctx, leave := context.WithCancel(context.Background())
	held := make(chan struct{})
	go func() {
		s.holdRefusal(httptest.NewRequest(http.MethodGet, "/v1/processors", nil).WithContext(ctx))
		close(held)
	}()
	require.Eventually(t, func() bool { return len(s.heldRefusals) == 1 }, 10*time.Second, time.Millisecond)
	// Held for an hour if it were held at all.
	s.holdRefusal(httptest.NewRequest(http.MethodGet, "/v1/processors", nil))
	assert.Len(t, s.heldRefusals, 1)
	leave()
	<-held
	assert.Empty(t, s.heldRefusals, "a client that left frees its place")
}
