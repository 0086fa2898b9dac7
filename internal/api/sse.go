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
// comment heartbeat while idle. Events are queued and one writer goroutine owns the
// connection, so sending never waits on the client: the turn runs at the
// processor's pace whatever the client does, and a client that stops reading
// or goes away just misses the rest of the stream (the turn is persisted
// regardless). It is safe for concurrent use; sends after close are dropped.
type sseStream struct {
	rc *http.ResponseController
	w  http.ResponseWriter
	// writeTimeout bounds one write, and the drain of what is still queued
	// when the stream closes, so a stalled client cannot keep a connection
	// busy (Config.WriteTimeout).
	writeTimeout time.Duration

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

	wake chan struct{} // has work for the writer; capacity 1
	done chan struct{} // closed when the writer has stopped
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
		limit: s.cfg.SSEBufferBytes, metrics: s.metrics,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	s.metrics.streamOpened()
	go st.run(s.cfg.HeartbeatInterval)
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
	st.signal()
}

// signal wakes the writer without waiting: a wake already pending covers
// this one.
func (st *sseStream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
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
	st.signal()
}

// close lets the writer send what is queued, within writeTimeout, and
// waits for it to stop; later sends are dropped.
func (st *sseStream) close() {
	st.mu.Lock()
	if !st.closed {
		st.closed = true
		st.drainBy = time.Now().Add(st.writeTimeout)
		st.signal()
	}
	st.mu.Unlock()
	<-st.done
}

// run is the writer: the only goroutine that touches the connection once
// the stream has started. It writes queued events in batches, and a
// heartbeat when nothing has been written for every (never if every <= 0).
func (st *sseStream) run(every time.Duration) {
	defer close(st.done)
	defer st.metrics.streamClosed()
	var idle <-chan time.Time
	var timer *time.Timer
	if every > 0 {
		timer = time.NewTimer(every)
		defer timer.Stop()
		idle = timer.C
	}
	// The headers go out now, so the client sees the stream open before the
	// first event.
	if !st.write(nil) {
		return
	}
	for {
		select {
		case <-st.wake:
		case <-idle:
			if !st.write([]byte(": heartbeat\n\n")) {
				return
			}
			timer.Reset(every)
			continue
		}
		for {
			batch, more := st.take()
			if !more {
				if st.finish() {
					return
				}
				break
			}
			if !st.write(batch) {
				return
			}
		}
		if timer != nil {
			timer.Reset(every)
		}
	}
}

// take hands the writer the queued events; more is false when there are
// none. The writer's previous batch becomes the next queue buffer.
func (st *sseStream) take() (batch []byte, more bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.metrics.queued(-st.writing)
	st.writing = 0
	if st.abandoned || len(st.pending) == 0 {
		return nil, false
	}
	batch = st.pending
	st.pending, st.spare, st.writing = st.spare[:0], batch, len(batch)
	return batch, true
}

// finish reports whether the writer is done: the stream is abandoned, or
// closed with nothing left to write. A cleanly finished stream clears its
// write deadline, so a kept-alive connection is not cut short later.
func (st *sseStream) finish() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.abandoned {
		return true
	}
	if st.closed && len(st.pending) == 0 {
		_ = st.rc.SetWriteDeadline(time.Time{})
		return true
	}
	return false
}

// write sends b and flushes under a deadline (an empty b just flushes). A
// failure abandons the stream; write reports whether it succeeded.
func (st *sseStream) write(b []byte) bool {
	st.mu.Lock()
	if st.abandoned {
		st.mu.Unlock()
		return false
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
		return false
	}
	return true
}
