// Package serve runs an http.Handler with chatd's connection discipline:
// every phase of a request has its own timeout, and shutdown does not wait on
// connections that are idle, still sending headers or still sending a body.
//
// net/http's own ReadTimeout and WriteTimeout are per request and would cut a
// long turn or stream short, so serve keeps ReadTimeout for the headers and
// body only (clearing it once the body is read) and sets a write deadline
// when each response starts, which a streaming handler moves forward event by
// event.
package serve

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// Timeouts bound each phase of a connection. Zero means no limit.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers.
	ReadHeader time.Duration
	// Read bounds reading a whole request, headers and body.
	Read time.Duration
	// Write bounds writing one response once it starts (a streaming handler
	// sets its own deadline per event).
	Write time.Duration
	// Idle bounds how long a kept-alive connection waits for its next request.
	Idle time.Duration
}

// Server serves one handler on a listener.
type Server struct {
	http     *http.Server
	timeouts Timeouts

	mu      sync.Mutex
	closing bool
	// fresh are connections that have not finished their first request's
	// headers; reading are requests whose body is still being read.
	fresh   map[net.Conn]struct{}
	reading map[*bodyReader]struct{}
}

// New returns a server for h. errorLog receives net/http's own errors (nil:
// the standard logger).
func New(h http.Handler, t Timeouts, errorLog *log.Logger) *Server {
	s := &Server{timeouts: t, fresh: map[net.Conn]struct{}{}, reading: map[*bodyReader]struct{}{}}
	s.http = &http.Server{
		Handler:           s.wrap(h),
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		IdleTimeout:       t.Idle,
		ConnState:         s.track,
		ErrorLog:          errorLog,
	}
	return s
}

// Serve accepts connections on ln until Shutdown; it returns
// http.ErrServerClosed after a shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.http.Serve(ln) }

// Shutdown stops accepting, closes connections that are idle or have not
// sent their headers, fails the body reads in progress (those requests end
// with an error at once), and waits for the running handlers until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.http.SetKeepAlivesEnabled(false)
	s.mu.Lock()
	s.closing = true
	for c := range s.fresh {
		_ = c.Close()
	}
	for b := range s.reading {
		b.abort()
	}
	s.mu.Unlock()
	return s.http.Shutdown(ctx)
}

// track remembers connections that have not completed their first request's
// headers: net/http's Shutdown treats them as idle only after 5 seconds.
func (s *Server) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state == http.StateNew {
		if s.closing {
			_ = c.Close()
			return
		}
		s.fresh[c] = struct{}{}
	} else {
		delete(s.fresh, c)
	}
}

// wrap applies the per-request deadlines around h.
func (s *Server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// A deadline left from the connection's previous response must not
		// cut this one.
		_ = rc.SetWriteDeadline(time.Time{})
		body := &bodyReader{ReadCloser: r.Body, rc: rc, server: s}
		if r.Body == nil || r.Body == http.NoBody {
			body.finish(true)
		} else {
			s.mu.Lock()
			s.reading[body] = struct{}{}
			s.mu.Unlock()
			r.Body = body
		}
		dw := &deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.timeouts.Write}
		defer func() {
			body.finish(false)
			// What the handler left buffered is flushed after it returns.
			dw.arm()
		}()
		h.ServeHTTP(dw, r)
	})
}

// bodyReader ends the read deadline once the body is read: net/http keeps
// reading the connection in the background to notice a client leaving, and
// the whole-request deadline would otherwise cancel the request's context
// mid-turn.
type bodyReader struct {
	io.ReadCloser
	rc     *http.ResponseController
	server *Server

	mu      sync.Mutex
	done    bool
	aborted bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		// A body cut short keeps its deadline: net/http discards what is
		// left of it after the handler, and that must not wait on a
		// trickle either.
		b.finish(err == io.EOF)
	}
	return n, err
}

// finish ends the body's registration for Shutdown and, when complete, its
// read deadline.
func (b *bodyReader) finish(complete bool) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	aborted := b.aborted
	b.mu.Unlock()
	b.server.mu.Lock()
	delete(b.server.reading, b)
	b.server.mu.Unlock()
	if complete && !aborted {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// abort fails the body read now and from now on; the caller holds the
// server's mu.
func (b *bodyReader) abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.aborted = true
	_ = b.rc.SetReadDeadline(time.Unix(1, 0))
}

// deadlineWriter starts the write deadline when the response starts.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
}

func (w *deadlineWriter) arm() {
	if w.timeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	if !w.started && code >= 200 {
		w.started = true
		w.arm()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Flush lets handlers that only know http.Flusher stream through.
func (w *deadlineWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// FlushError reports a failed flush to http.ResponseController.
func (w *deadlineWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
