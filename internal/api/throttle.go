package api

import (
	"sync"
	"time"
)

// logThrottle lets one log line through per interval and counts the lines it
// holds back, so an outage of the store, which fails every request, yields
// one error line a second (with the count) instead of one per request.
type logThrottle struct {
	interval time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether a line may be logged at now and, if so, how many
// were held back since the last one.
func (t *logThrottle) allow(now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < t.interval {
		t.suppressed++
		return false, 0
	}
	t.last = now
	suppressed, t.suppressed = t.suppressed, 0
	return true, suppressed
}
