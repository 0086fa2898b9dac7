// Package ratelimit counts requests per key (a principal, a client address)
// in fixed windows aligned to the wall clock, and says whether one more is
// allowed.
//
// With a shared Counter (Redis) every instance counts on one counter per key
// and window, yet a request rarely waits on it: an instance reserves a block
// of the key's allowance at once (a twentieth of the limit) and admits from
// it locally, reserving the next block when it runs out. The limit is never
// exceeded across instances — only reserved allowance is spent — and one
// request in a block pays the round trip. Allowance reserved but unspent when
// a window ends is lost, so a key may get up to a block per instance less
// than its limit. Once the counter shows a key's allowance spent, its
// requests are refused locally until the window ends. Without a Counter the
// count is this process's.
package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rate is a number of requests per window; N = 0 means no limit.
type Rate struct {
	N   int
	Per time.Duration
}

// ParseRate reads "600/1m" (requests per Go duration); "0" disables.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return Rate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err != nil || count < 0 {
		return Rate{}, fmt.Errorf("%q: want requests/duration, such as 600/1m, or 0 to disable", s)
	}
	d, err := time.ParseDuration(strings.TrimSpace(per))
	if err != nil || d < time.Second {
		return Rate{}, fmt.Errorf("%q: the window must be a duration of at least 1s, such as 1m", s)
	}
	return Rate{N: count, Per: d}, nil
}

// Decode lets envconfig fill a Rate from the environment.
func (r *Rate) Decode(value string) error {
	rate, err := ParseRate(value)
	if err != nil {
		return err
	}
	*r = rate
	return nil
}

func (r Rate) String() string {
	if r.N == 0 {
		return "0"
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

// Counter is the count every instance shares.
type Counter interface {
	// AddRequests adds deltas[i] to the count of keys[i] in the window that
	// starts at window, keeps the counts for at least ttl, and returns the
	// new totals. Errors are the store's (store.ErrUnavailable).
	AddRequests(ctx context.Context, window time.Time, ttl time.Duration, keys []string, deltas []int64) ([]int64, error)
}

// reserveTimeout bounds the wait for the counter.
const reserveTimeout = time.Second

// Decision is what Allow found.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is how long until the window ends and the count starts over.
	Reset time.Duration
}

// ResetSeconds is Reset rounded up to whole seconds, as RateLimit-Reset
// and Retry-After carry it.
func (d Decision) ResetSeconds() int {
	return int((d.Reset + time.Second - 1) / time.Second)
}

// Limiter admits at most Rate.N requests per key and window. It is safe for
// concurrent use.
type Limiter struct {
	rate    Rate
	block   int64
	counter Counter
	log     *slog.Logger
	now     func() time.Time

	mu        sync.Mutex
	entries   map[string]*entry
	lastSweep time.Time
}

type entry struct {
	window time.Time
	// used counts this key's requests: this process's admissions without
	// a Counter, else the shared total last heard less the reserved
	// allowance this process has not spent yet (left).
	used int64
	left int64
	// spent: the shared total has reached the limit in this window.
	spent bool
}

// New returns a limiter of rate; counter nil counts in this process only.
func New(rate Rate, counter Counter, log *slog.Logger) *Limiter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Limiter{rate: rate, block: max(int64(rate.N)/20, 1), counter: counter, log: log, now: time.Now,
		entries: map[string]*entry{}}
}

// Enabled reports whether the limiter limits anything.
func (l *Limiter) Enabled() bool { return l != nil && l.rate.N > 0 }

// entryLocked returns key's entry for window; the caller holds mu.
func (l *Limiter) entryLocked(key string, window time.Time) *entry {
	if window.Sub(l.lastSweep) >= l.rate.Per {
		// Once a window, forget the keys of finished windows.
		l.lastSweep = window
		for k, e := range l.entries {
			if e.window.Before(window) {
				delete(l.entries, k)
			}
		}
	}
	e := l.entries[key]
	if e == nil || !e.window.Equal(window) {
		e = &entry{window: window}
		l.entries[key] = e
	}
	return e
}

func (l *Limiter) decision(allowed bool, used int64, window, now time.Time) Decision {
	remaining := min(max(int64(l.rate.N)-used, 0), int64(l.rate.N))
	return Decision{Allowed: allowed, Limit: l.rate.N, Remaining: int(remaining), Reset: window.Add(l.rate.Per).Sub(now)}
}

// Allow counts one request for key and reports whether it is within the
// limit. Refused requests are not counted.
func (l *Limiter) Allow(ctx context.Context, key string) Decision {
	now := l.now()
	window := now.Truncate(l.rate.Per)
	limit := int64(l.rate.N)
	l.mu.Lock()
	e := l.entryLocked(key, window)
	switch {
	case l.counter == nil:
		if e.used >= limit {
			l.mu.Unlock()
			return l.decision(false, e.used, window, now)
		}
		e.used++
		l.mu.Unlock()
		return l.decision(true, e.used, window, now)
	case e.left > 0:
		e.left--
		e.used++
		l.mu.Unlock()
		return l.decision(true, e.used, window, now)
	case e.spent:
		l.mu.Unlock()
		return l.decision(false, limit, window, now)
	}
	l.mu.Unlock()

	// This process has no allowance left for key: reserve the next block.
	// A counter that does not answer soon is treated as down.
	ctx, cancel := context.WithTimeout(ctx, reserveTimeout)
	totals, err := l.counter.AddRequests(ctx, window, l.rate.Per+time.Minute, []string{key}, []int64{l.block})
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	e = l.entryLocked(key, window)
	if err != nil {
		// A limiter must not fail requests because its store does: admit,
		// and a block more without asking again, so an outage does not add
		// a failing round trip to every request.
		l.log.Debug("rate limit counter unavailable; admitting", "error", err.Error())
		e.left += l.block - 1
		e.used++
		return l.decision(true, e.used, window, now)
	}
	before := totals[0] - l.block
	granted := min(l.block, limit-before)
	if granted <= 0 {
		e.spent = true
		return l.decision(false, limit, window, now)
	}
	if granted < l.block {
		e.spent = true // the last of the allowance; nothing is left to reserve
	}
	// Of the reserved block, one is this request.
	e.left += granted - 1
	e.used = max(e.used+1, before+1)
	return l.decision(true, e.used, window, now)
}

// Blocked reports, without counting, whether key has used its allowance in
// this window, as far as this process knows.
func (l *Limiter) Blocked(key string) (Decision, bool) {
	now := l.now()
	window := now.Truncate(l.rate.Per)
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entryLocked(key, window)
	blocked := e.used >= int64(l.rate.N) || (e.spent && e.left == 0)
	return l.decision(!blocked, e.used, window, now), blocked
}
