package api

import (
	"net/http"
	"sync"
)

// streamCounts counts the streams each principal holds open on this
// instance, to cap them: every open stream costs a connection, a writer
// and a follower, so one principal must not be able to hold them all. The
// count is per instance, not shared through the store (see
// docs/decisions.md): a stream lives and dies with its instance, so a count
// kept here can never leak.
type streamCounts struct {
	max int

	mu   sync.Mutex
	open map[string]int
}

func newStreamCounts(max int) *streamCounts {
	return &streamCounts{max: max, open: map[string]int{}}
}

// acquire takes one of principal's streams, reporting false when all are
// open.
func (c *streamCounts) acquire(principal string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[principal] >= c.max {
		return false
	}
	c.open[principal]++
	return true
}

// release gives back a stream acquire took.
func (c *streamCounts) release(principal string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[principal] <= 1 {
		delete(c.open, principal)
		return
	}
	c.open[principal]--
}

// alwaysStreams marks routes that answer with a stream whatever the request
// asks for.
func alwaysStreams(*http.Request) bool { return true }

// limitStreams caps the open streams of each principal on a route whose
// requests streams reports will be answered with a stream: beyond
// Config.MaxStreams the request is refused with 429 rate_limited before it
// does anything (no turn begins). The stream is counted until the handler
// returns, which is when its connection is done with.
func (s *Server) limitStreams(streams func(*http.Request) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !streams(r) {
			next.ServeHTTP(w, r)
			return
		}
		principal := principalFrom(r.Context())
		if !s.streams.acquire(principal) {
			s.holdRefusal(r)
			w.Header().Set("Retry-After", "1")
			s.writeError(w, r, errorf(http.StatusTooManyRequests, "rate_limited",
				"too many open streams: at most %d at a time; close one first", s.cfg.MaxStreams))
			return
		}
		defer s.streams.release(principal)
		next.ServeHTTP(w, r)
	})
}
