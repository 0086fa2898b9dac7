package api

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// wantsStream reports whether the client accepts Server-Sent Events: the
// Accept header lists text/event-stream with a non-zero quality.
func wantsStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mediaType, params, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream") && acceptable(params) {
				return true
			}
		}
	}
	return false
}

// acceptable reports whether an Accept entry's parameters leave it a
// quality above zero.
func acceptable(params string) bool {
	for _, p := range strings.Split(params, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(name, "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			return err == nil && q > 0
		}
	}
	return true
}

// sseWriteTimeout bounds one write, so a stalled client cannot hold a turn
// beyond its timeout; a client that stops reading just misses the rest of the
// stream (the turn is persisted regardless).
const sseWriteTimeout = 10 * time.Second

// sseStream writes Server-Sent Events, each flushed as written, with ids
// 1, 2, 3… and a comment heartbeat while idle. It is safe for concurrent use;
// after the client has gone, writes are dropped.
type sseStream struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	nextID int
	gone   bool
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// startStream sends the SSE headers and starts the heartbeat.
func (s *Server) startStream(w http.ResponseWriter) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // asks nginx-style proxies not to buffer
	w.WriteHeader(http.StatusOK)
	st := &sseStream{w: w, rc: http.NewResponseController(w), stop: make(chan struct{}), done: make(chan struct{})}
	st.flush()
	go st.heartbeat(s.cfg.HeartbeatInterval)
	return st
}

func (st *sseStream) heartbeat(every time.Duration) {
	defer close(st.done)
	if every <= 0 {
		<-st.stop
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
			st.mu.Lock()
			st.write(": heartbeat\n\n")
			st.mu.Unlock()
		}
	}
}

// sendJSON sends an event whose data is v encoded as JSON.
func (st *sseStream) sendJSON(event string, v any) {
	data, err := marshal(v)
	if err != nil {
		return
	}
	st.send(event, data)
}

// send writes one event. data is compact JSON, a single line.
func (st *sseStream) send(event string, data []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	st.nextID++
	var b strings.Builder
	b.Grow(len(data) + len(event) + 32)
	b.WriteString("id: ")
	b.WriteString(strconv.Itoa(st.nextID))
	b.WriteString("\nevent: ")
	b.WriteString(event)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	st.write(b.String())
}

// write sends raw bytes and flushes; the caller holds mu.
func (st *sseStream) write(s string) {
	if st.gone {
		return
	}
	_ = st.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := st.w.Write([]byte(s)); err != nil {
		st.gone = true
		return
	}
	st.flush()
}

func (st *sseStream) flush() {
	if err := st.rc.Flush(); err != nil {
		st.gone = true
	}
}

// close stops the heartbeat; later sends are dropped.
func (st *sseStream) close() {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	st.closed = true
	st.mu.Unlock()
	close(st.stop)
	<-st.done
	_ = st.rc.SetWriteDeadline(time.Time{})
}
