package turn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFlushTicksAreShared: turns that buffer events at different moments of
// one interval flush at the same instant, the interval's end, so the store
// can send their appends together; an event at a tick waits a whole
// interval, so no turn writes twice in one.
func TestFlushTicksAreShared(t *testing.T) {
	const every = 50 * time.Millisecond
	tick := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{0, time.Nanosecond, 13 * time.Millisecond, every - time.Nanosecond} {
		now := tick.Add(at)
		d := untilNextTick(now, every)
		assert.Equal(t, tick.Add(every), now.Add(d), "armed %s after a tick", at)
		assert.Positive(t, d)
		assert.LessOrEqual(t, d, every)
	}
}
