package throttle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"chatd/internal/throttle"
)

func TestLog(t *testing.T) {
	t.Parallel()
	th := throttle.NewLog(time.Second)
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
		ok, suppressed := th.Allow(t0.Add(s.at))
		assert.Equal(t, s.wantOK, ok, "step %d", i)
		assert.Equal(t, s.wantSuppressed, suppressed, "step %d", i)
	}
}
