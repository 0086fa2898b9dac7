// Package throttle limits repeated log lines: during an outage of the
// store every request and every running turn fails the same way, and one
// line a second, with the count of those held back, says as much as
// thousands.
package throttle

import (
	"sync"
	"time"
)

// Log lets one line through per interval and counts the lines it holds
// back. It is safe for concurrent use.
type Log struct {
	interval time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// NewLog returns a Log that lets one line through per interval.
func NewLog(interval time.Duration) *Log { return &Log{interval: interval} }

// Allow reports whether a line may be logged at now and, if so, how many
// were held back since the last one.
func (t *Log) Allow(now time.Time) (ok bool, suppressed int) {
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
