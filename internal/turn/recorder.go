package turn

import (
	"context"
	"sync"
	"time"

	"chatd/internal/store"
)

// recorder logs a streamed turn's deltas for reattachment, in batches: at
// most one store round trip per flush interval, whatever the processor's
// pace. What is still buffered when the turn ends rides its commit or
// release. A recorder that is not enabled logs nothing.
type recorder struct {
	e                *Engine
	threadID, turnID string

	mu  sync.Mutex
	buf []store.TurnEvent

	stopCh chan struct{}
	done   chan struct{}
}

func newRecorder(e *Engine, threadID, turnID string, enabled bool) *recorder {
	r := &recorder{e: e, threadID: threadID, turnID: turnID}
	if enabled {
		r.stopCh, r.done = make(chan struct{}), make(chan struct{})
		go r.run(e.cfg.FlushEvery)
	}
	return r
}

// add buffers an event for the next flush.
func (r *recorder) add(ev Event) {
	if r.stopCh == nil {
		return
	}
	r.mu.Lock()
	r.buf = append(r.buf, ev.record())
	r.mu.Unlock()
}

func (r *recorder) run(every time.Duration) {
	defer close(r.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-r.stopCh:
			return
		case <-tick.C:
			r.flush()
		}
	}
}

// flush writes what is buffered. On failure the events go back to the
// front of the buffer, to be written by the next flush or with the turn's
// last event, so the log never has a gap.
func (r *recorder) flush() {
	r.mu.Lock()
	batch := r.buf
	r.buf = nil
	r.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.e.store.AppendTurnEvents(ctx, r.threadID, r.turnID, batch); err != nil {
		r.e.warnStore("logging turn events", err, "thread_id", r.threadID, "turn_id", r.turnID)
		r.mu.Lock()
		r.buf = append(batch, r.buf...)
		r.mu.Unlock()
	}
}

// stop ends the flushing and returns what was not written yet.
func (r *recorder) stop() []store.TurnEvent {
	if r.stopCh == nil {
		return nil
	}
	close(r.stopCh)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	rest := r.buf
	r.buf = nil
	return rest
}
