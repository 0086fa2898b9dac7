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

// sseStream writes Server-Sent Events, each with its turn's event ID, and a
// comment heartbeat while idle. Events are queued and written by a writer
// that runs only while there is something to write, so sending never waits
// on the client: the turn runs at the processor's pace whatever the client
// does, and a client that stops reading or goes away just misses the rest of
// the stream (the turn is persisted regardless). It is safe for concurrent
// use; sends after close are dropped.
//
// The writer is a goroutine started when output is queued and none is
// running, ending when the queue is empty, and the heartbeat a timer: a
// stream waiting on its model, as thousands of long streams on an instance
// mostly are, holds no goroutine and no goroutine stack of its own.
type sseStream struct {
	rc *http.ResponseController
	w  http.ResponseWriter
	// writeTimeout bounds one write, and the drain of what is still queued
	// when the stream closes, so a stalled client cannot keep a connection
	// busy (Config.WriteTimeout).
	writeTimeout time.Duration
	heartbeat    time.Duration // the idle time before a heartbeat; <= 0 for none

	// limit is how many bytes of encoded events may wait for the client
	// (Config.SSEBufferBytes): a client that falls further behind is too
	// slow to follow the turn, and its stream is abandoned rather than let
	// the processor wait for it or memory grow.
	limit   int
	metrics *Metrics

	mu      sync.Mutex
	pending []byte // encoded events not yet taken by the writer
	writing int    // the bytes of the batch being written
	spare   []byte // the writer's last batch, reused to spare allocations
	// abandoned is set when a write failed or the client fell too far
	// behind: nothing more is written and queued output is discarded.
	abandoned bool
	closed    bool
	drainBy   time.Time // the deadline for what is queued at close

	running    bool        // a writer is running
	headersDue bool        // the headers wait to be flushed
	beatDue    bool        // a heartbeat waits to be written
	idle       *time.Timer // the next heartbeat, armed while no writer runs
	finished   bool        // the writer is done for good; done is closed
	done       chan struct{}
}

// startStream sends the SSE headers and starts the stream's writer.
func (s *Server) startStream(w http.ResponseWriter) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // asks nginx-style proxies not to buffer
	w.WriteHeader(http.StatusOK)
	st := &sseStream{
		w: w, rc: http.NewResponseController(w), writeTimeout: s.cfg.WriteTimeout,
		heartbeat: s.cfg.HeartbeatInterval, limit: s.cfg.SSEBufferBytes, metrics: s.metrics,
		done: make(chan struct{}),
	}
	s.metrics.streamOpened()
	// The headers go out now, so the client sees the stream open before the
	// first event.
	st.mu.Lock()
	st.headersDue = true
	st.wakeLocked()
	st.mu.Unlock()
	return st
}

// send queues one event with its ID; data is compact JSON, a single line.
// It never waits for the client.
func (st *sseStream) send(id int, event string, data []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed || st.abandoned || !st.roomLocked(len(event)+len(data)+32) {
		return
	}
	b := st.pending
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, "\nevent: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	st.queuedLocked(b)
}

// sendData queues one event that is only a data line, as the frontend
// protocols' streams are (their events name themselves inside the JSON).
func (st *sseStream) sendData(data []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed || st.abandoned || !st.roomLocked(len(data)+8) {
		return
	}
	b := append(st.pending, "data: "...)
	b = append(b, data...)
	st.queuedLocked(append(b, "\n\n"...))
}

// roomLocked reports whether n more bytes may be queued, abandoning the
// stream when they may not; the caller holds mu. What is queued counts the
// batch being written: a client that does not read holds it too. One event
// larger than the whole limit still goes to a client that has nothing
// queued.
func (st *sseStream) roomLocked(n int) bool {
	queued := len(st.pending) + st.writing
	if queued > 0 && queued+n > st.limit {
		st.abandonLocked()
		return false
	}
	return true
}

// queuedLocked makes b, the queue grown by an event, the queue, and wakes
// the writer; the caller holds mu.
func (st *sseStream) queuedLocked(b []byte) {
	st.metrics.queued(len(b) - len(st.pending))
	st.pending = b
	st.wakeLocked()
}

// wakeLocked starts the writer unless it is running or done; the caller
// holds mu. A running writer takes what was queued before it stops.
func (st *sseStream) wakeLocked() {
	if !st.running && !st.finished {
		st.running = true
		go st.run()
	}
}

// abandonLocked gives up on the client; the caller holds mu. The deadline in
// the past fails a write in progress at once, and the end of the response
// after the handler returns, so the connection is dropped, not reused.
func (st *sseStream) abandonLocked() {
	if !st.abandoned {
		st.metrics.streamDropped()
	}
	st.abandoned = true
	st.metrics.queued(-len(st.pending) - st.writing)
	st.pending, st.writing, st.spare = nil, 0, nil
	_ = st.rc.SetWriteDeadline(time.Unix(1, 0))
	st.wakeLocked()
}

// close lets the writer send what is queued, within writeTimeout, and
// waits for it to stop; later sends are dropped.
func (st *sseStream) close() {
	st.mu.Lock()
	if !st.closed {
		st.closed = true
		st.drainBy = time.Now().Add(st.writeTimeout)
		st.wakeLocked()
	}
	st.mu.Unlock()
	<-st.done
}

// run is the writer: while it runs, the only goroutine that touches the
// connection. It writes what is queued, in batches, until nothing is.
func (st *sseStream) run() {
	for {
		batch, ok := st.next()
		if !ok {
			return
		}
		st.write(batch) // a failure abandons the stream, as next then sees
	}
}

// next hands the writer what to write next: the queued events, else the
// headers or a heartbeat that are due. When there is nothing, the writer
// stops: for good when the stream is abandoned or closed (a cleanly closed
// stream clears its write deadline, so a kept-alive connection is not cut
// short later), else until more is queued, with a heartbeat armed for when
// nothing has been written for the heartbeat interval. The writer's previous batch
// becomes the next queue buffer.
func (st *sseStream) next() (batch []byte, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.metrics.queued(-st.writing)
	st.writing = 0
	switch {
	case st.abandoned:
		st.finishLocked()
		return nil, false
	case len(st.pending) > 0:
		batch = st.pending
		st.pending, st.spare, st.writing = st.spare[:0], batch, len(batch)
		st.headersDue, st.beatDue = false, false // the batch's flush covers them
		return batch, true
	case st.headersDue:
		st.headersDue = false
		return nil, true // a flush
	case st.beatDue:
		st.beatDue = false
		return heartbeatComment, true
	case st.closed:
		_ = st.rc.SetWriteDeadline(time.Time{})
		st.finishLocked()
		return nil, false
	}
	st.running = false
	if st.heartbeat > 0 {
		if st.idle == nil {
			st.idle = time.AfterFunc(st.heartbeat, st.beat)
		} else {
			st.idle.Reset(st.heartbeat)
		}
	}
	return nil, false
}

// heartbeatComment is what a heartbeat writes: an SSE comment, which
// clients ignore and proxies see as traffic.
var heartbeatComment = []byte(": heartbeat\n\n")

// beat runs the writer for a heartbeat, on the idle timer's goroutine,
// unless a writer has started since the timer was armed (it arms the timer
// again when it stops) or the stream is closing.
func (st *sseStream) beat() {
	st.mu.Lock()
	if st.running || st.finished || st.closed {
		st.mu.Unlock()
		return
	}
	st.running, st.beatDue = true, true
	st.mu.Unlock()
	st.run()
}

// finishLocked ends the writer for good; the caller holds mu.
func (st *sseStream) finishLocked() {
	st.running, st.finished = false, true
	if st.idle != nil {
		st.idle.Stop()
	}
	st.metrics.streamClosed()
	close(st.done)
}

// write sends b and flushes under a deadline (an empty b just flushes). A
// failure abandons the stream.
func (st *sseStream) write(b []byte) {
	st.mu.Lock()
	if st.abandoned {
		st.mu.Unlock()
		return
	}
	// Set under mu, so abandonLocked's deadline is never overwritten.
	deadline := time.Now().Add(st.writeTimeout)
	if st.closed && st.drainBy.Before(deadline) {
		deadline = st.drainBy
	}
	_ = st.rc.SetWriteDeadline(deadline)
	st.mu.Unlock()

	var err error
	if len(b) > 0 {
		_, err = st.w.Write(b)
	}
	if err == nil {
		err = st.rc.Flush()
	}
	if err != nil {
		st.mu.Lock()
		st.abandonLocked()
		st.mu.Unlock()
	}
}
