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
//
// A flush is a timer armed by the first event after the last flush, not a
// goroutine and ticker per turn: an instance holds thousands of streamed
// turns at once, most of them waiting on their model, and an idle turn then
// costs no wake-ups at all. Every turn's timer fires on the same grid, the
// multiples of the flush interval, so the turns of an instance flush
// together and the store can send their appends in shared pipelines rather
// than a round trip each (at 2,500 streams a chunk every 200 ms, about 600
// turns have events at each 50 ms tick).
type recorder struct {
	e                *Engine
	threadID, turnID string
	enabled          bool

	// flushing is held while a batch is written, so stop waits for it.
	flushing sync.Mutex

	mu      sync.Mutex
	buf     []store.TurnEvent
	timer   *time.Timer // the next flush, armed while events wait for one
	stopped bool
}

func newRecorder(e *Engine, threadID, turnID string, enabled bool) *recorder {
	return &recorder{e: e, threadID: threadID, turnID: turnID, enabled: enabled}
}

// add buffers an event for the next flush, arming one if none is due.
func (r *recorder) add(ev Event) {
	if !r.enabled {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, ev.record())
	r.armLocked()
}

// armLocked schedules a flush unless one is due or the recorder stopped;
// the caller holds mu.
func (r *recorder) armLocked() {
	if r.timer == nil && !r.stopped {
		r.timer = time.AfterFunc(untilNextTick(time.Now(), r.e.cfg.FlushEvery), r.flush)
	}
}

// untilNextTick is how long from now to the next multiple of every: the
// next flush of every turn. A flush at a tick arms the next for the tick
// after, so a turn still writes at most once an interval.
func untilNextTick(now time.Time, every time.Duration) time.Duration {
	return now.Truncate(every).Add(every).Sub(now)
}

// flush writes what is buffered. On failure the events go back to the
// front of the buffer, to be written by the next flush or with the turn's
// last event, so the log never has a gap.
func (r *recorder) flush() {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	r.timer = nil
	batch := r.buf
	r.buf = nil
	if r.stopped || len(batch) == 0 {
		r.buf = batch
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.e.store.AppendTurnEvents(ctx, r.threadID, r.turnID, batch); err != nil {
		r.e.warnStore("logging turn events", err, "thread_id", r.threadID, "turn_id", r.turnID)
		r.mu.Lock()
		r.buf = append(batch, r.buf...)
		r.armLocked()
		r.mu.Unlock()
	}
}

// stop ends the flushing, waiting for a flush in progress, and returns what
// was not written yet.
func (r *recorder) stop() []store.TurnEvent {
	if !r.enabled {
		return nil
	}
	r.mu.Lock()
	r.stopped = true
	if r.timer != nil && r.timer.Stop() {
		r.timer = nil
	}
	r.mu.Unlock()
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	rest := r.buf
	r.buf = nil
	return rest
}
