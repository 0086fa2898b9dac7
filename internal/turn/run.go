package turn

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"chatd/internal/blocks"
	"chatd/internal/processor"
	"chatd/internal/store"
	"chatd/internal/telemetry"
)

// Ref names a turn: its thread, the principal the thread belongs to, and
// the turn's ID.
type Ref struct {
	ThreadID  string
	Principal string
	TurnID    string
}

// ID is the turn's ID; for an idempotent retry, the original turn's.
func (t *Turn) ID() string { return t.ref.TurnID }

// Events returns the turn's events in order, to be ranged over once. For a
// begun turn, ranging runs it: its start, its deltas when it streams, then
// turn.completed or error; the error of each pair is nil. The turn does not
// depend on the consumer: one whose client left, or that stops ranging,
// still waits while the turn runs to completion, bounded by the turn
// timeout, and is persisted. For an idempotent retry nothing runs: the
// events are the original turn.completed, or, when after is the ID of an
// event the client already has (a stream retried with Last-Event-ID), the
// original turn's logged events after it while its log lives.
func (t *Turn) Events(ctx context.Context, after int) iter.Seq2[Event, error] {
	if t.replay != nil {
		return t.replayEvents(ctx, after)
	}
	return func(yield func(Event, error) bool) {
		if t.ran.Swap(true) {
			return
		}
		t.out.yield = yield
		t.run(ctx)
	}
}

// replayEvents are an idempotent retry's events.
func (t *Turn) replayEvents(ctx context.Context, after int) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if after >= 0 && blocks.IsCanonicalID(t.ref.TurnID) {
			first := true
			for ev, err := range t.e.Events(ctx, t.ref, after) {
				if first && errors.Is(err, store.ErrTurnNotFound) {
					break // the log has expired: the result stands for it
				}
				if first = false; !yield(ev, err) {
					return
				}
			}
			if !first {
				return
			}
		}
		yield(*t.replay, nil)
	}
}

// outbox hands a running turn's events to its consumer until the consumer
// stops ranging; the turn goes on regardless.
type outbox struct {
	yield   func(Event, error) bool
	stopped bool
}

func (o *outbox) send(ev Event) {
	if !o.stopped && !o.yield(ev, nil) {
		o.stopped = true
	}
}

// run runs a begun turn to its end, sending out every event.
func (t *Turn) run(ctx context.Context) {
	e := t.e
	thread := t.begun.Thread
	out, seq, deltas := &t.out, &t.seq, &t.deltas
	defer e.stops.unregister(t.ref.TurnID)
	if t.stopOnDisconnect {
		defer context.AfterFunc(ctx, t.stopper.stop)()
	}
	// A lookup through a WithoutCancel context allocates (the context is
	// boxed on each Value call), so the span is looked up before it and,
	// when tracing, set again above it: the store's and the processor's
	// many span lookups then stop at the first layer.
	ctx, span := telemetry.StartChild(ctx, tracerName, "chatd.turn", trace.SpanKindInternal)
	ctx = context.WithoutCancel(ctx)
	if span.IsRecording() {
		ctx = trace.ContextWithSpan(ctx, span)
		defer span.End()
		span.SetAttributes(attribute.String("chatd.thread_id", thread.ID), attribute.String("chatd.turn_id", t.ref.TurnID),
			attribute.String("chatd.processor", thread.Processor))
	}
	out.send(t.first)

	// The lease is renewed until the turn's outcome is written; if it is
	// lost, the processor is stopped, since its commit would be refused
	// anyway.
	leaseCtx, lease := t.keepLease(ctx)
	rec := newRecorder(e, thread.ID, t.ref.TurnID, t.stream)
	seq.last = 1
	if t.stream {
		deltas.ready = make(chan struct{}, 1)
	}
	emit := t.emitter(rec)

	procCtx, endProc := context.WithCancel(leaseCtx)
	output, err := t.invoke(procCtx, emit, deltas, out)
	// A processor abandoned at its timeout is told to end now, not when
	// the lease ends.
	endProc()
	if err == nil && output.Usage != nil {
		output.Meta = withMeta(output.Meta, blocks.MetaUsage, usageMeta(*output.Usage))
		e.countTokens(thread.Processor, *output.Usage)
	}
	stopped := t.stopper.settle()
	// Closed before the streamed text is read: a processor still running
	// past a stop's grace can add nothing that the kept text lacks.
	id := seq.close()
	if stopped || (err == nil && output.Stopped) {
		output, err = stoppedOutput(output, err, seq.streamed()), nil
		t.stopped = true
	}
	deltas.drain(out)
	last := t.finish(ctx, output, err, lease, id, rec.stop())
	lease.stop()
	endSpan(span, last)
	out.send(last)
}

// usageMeta is a Usage as the reply's _meta records it.
func usageMeta(u processor.Usage) map[string]any {
	return map[string]any{"model": u.Model, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens}
}

// countTokens tells an observer that counts tokens what a turn spent.
func (e *Engine) countTokens(proc string, u processor.Usage) {
	if o, ok := e.obs.(UsageObserver); ok {
		o.ModelTokens(proc, u.Model, "input", u.InputTokens)
		o.ModelTokens(proc, u.Model, "output", u.OutputTokens)
	}
}

// tracerName names the spans the engine starts.
const tracerName = "chatd/internal/turn"

// endSpan records a turn's outcome on its span.
func endSpan(span trace.Span, last Event) {
	if !span.IsRecording() {
		return
	}
	status := StatusFailed
	if last.Kind == EventCompleted && last.Result != nil {
		status = last.Result.Status
	}
	span.SetAttributes(attribute.String("chatd.turn.status", status))
	if last.Failure != nil {
		span.SetStatus(codes.Error, last.Failure.Detail)
	}
}

// emitter is the Emit a turn's processor streams through: each delta of a
// streamed turn is numbered, logged and queued for the consumer; a turn
// answered as one body has no use for deltas, so they are neither numbered
// nor logged (its log has no gaps), and only their text is kept, for a
// stop.
func (t *Turn) emitter(rec *recorder) processor.Emit {
	seq, deltas := &t.seq, &t.deltas
	return func(d processor.Delta) {
		if !t.stream {
			seq.keep(d.Text)
			return
		}
		if d.Text == "" && len(d.Meta) == 0 {
			return
		}
		data, err := blocks.Marshal(Delta{Text: d.Text, Meta: d.Meta})
		if err != nil {
			return
		}
		seq.emit(func(id int) {
			ev := Event{ID: id, Kind: EventDelta, Delta: Delta{Text: d.Text, Meta: d.Meta}, data: data}
			seq.text.WriteString(d.Text)
			rec.add(ev)
			deltas.push(ev)
		})
	}
}

// stoppedOutput is what a stopped turn keeps: what its processor answered
// within the grace of a stop, else the text it streamed; either way the
// streamed text is a prefix of the kept text, and no question is left
// pending.
func stoppedOutput(out processor.Output, err error, streamed string) processor.Output {
	if err != nil {
		out = processor.Output{}
	}
	if !strings.HasPrefix(out.Text, streamed) {
		out.Text = streamed
	}
	out.Pause = nil
	out.Meta = withMeta(out.Meta, blocks.MetaStopped, true)
	return out
}

// finish commits a turn whose processor has answered, or ends it failed,
// and returns its last event.
func (t *Turn) finish(ctx context.Context, output processor.Output, err error, lease *lease, id int, logged []store.TurnEvent) Event {
	e := t.e
	proc := t.begun.Thread.Processor
	if leaseErr := lease.lost(); leaseErr != nil {
		// Another turn may hold the thread now: nothing is written, and the
		// client hears it as the store's failure (503), not the processor's.
		e.obs.TurnEnded(proc, StatusFailed)
		return t.lost(ctx, leaseErr, id)
	}
	var commit store.Commit
	var result encodedResult
	if err == nil {
		commit, result, err = t.buildCommit(output)
	}
	if err != nil {
		return t.fail(err, id, logged)
	}
	last := Event{ID: id, Kind: EventCompleted, Result: result.value, data: result.data}
	commit.Start, commit.Events = t.first.record(), append(logged, last.record())
	if err := e.store.CommitTurn(ctx, commit); err != nil {
		e.obs.TurnEnded(proc, StatusFailed)
		return t.lost(ctx, err, id)
	}
	status := result.value.Status
	if commit.Pause != nil {
		e.obs.Elicitation(proc, "created")
	}
	e.obs.TurnEnded(proc, status)
	if t.answer != "" {
		e.obs.Elicitation(proc, answerEvent[t.answer])
	}
	return last
}

// sequence numbers a turn's events. Deltas come from the processor's
// goroutine; once the turn has taken its last ID, a late delta from a
// processor abandoned at its timeout is dropped.
type sequence struct {
	mu     sync.Mutex
	last   int
	closed bool
	// text is the text of the deltas emitted so far.
	text strings.Builder
}

// emit runs send with the next ID, unless the sequence is closed; sends are
// serialized.
func (s *sequence) emit(send func(id int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.last++
	send(s.last)
}

// keep adds the text of a delta that is not sent, unless the sequence is
// closed.
func (s *sequence) keep(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.text.WriteString(text)
	}
}

// streamed is the text of the deltas emitted so far.
func (s *sequence) streamed() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// close returns the ID of the turn's last event and drops later emits.
func (s *sequence) close() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.last + 1
}

// deltaQueue carries a streamed turn's deltas from the processor's
// goroutine to the consumer's, so the processor never waits for the
// consumer and the consumer is only ever called from its own goroutine.
type deltaQueue struct {
	mu    sync.Mutex
	queue []queuedDelta
	ready chan struct{} // has deltas; capacity 1; nil unless the turn streams
	// spare is the last drained batch, reused as the next queue; only
	// drain touches it.
	spare []queuedDelta
}

// queuedDelta is a delta event as it waits: smaller than an Event, which
// also has room for every other kind.
type queuedDelta struct {
	id    int
	delta Delta
	data  []byte
}

// deltaBatch is a streamed turn's first allocation for its queue. The
// queue and its spare live as long as the turn; a model streaming a few
// chunks a second has one queued at a time, and a processor emitting
// faster than its consumer drains grows the queue to what it needs, once.
const deltaBatch = 4

func (q *deltaQueue) push(ev Event) {
	q.mu.Lock()
	if q.queue == nil {
		q.queue = make([]queuedDelta, 0, deltaBatch)
	}
	q.queue = append(q.queue, queuedDelta{id: ev.ID, delta: ev.Delta, data: ev.data})
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// drain sends out what is queued, in order. It is called from the
// consumer's goroutine only.
func (q *deltaQueue) drain(out *outbox) {
	q.mu.Lock()
	batch := q.queue
	q.queue = q.spare[:0]
	q.mu.Unlock()
	for _, d := range batch {
		out.send(Event{ID: d.id, Kind: EventDelta, Delta: d.delta, data: d.data})
	}
	clear(batch)
	q.spare = batch
}

// fail ends a turn whose processor failed: nothing is appended to history,
// the lock is released and the error event logged with the release.
func (t *Turn) fail(err error, id int, logged []store.TurnEvent) Event {
	ev := failedEvent(id, processorFailure(err))
	t.release(append(logged, ev.record()))
	t.e.obs.TurnEnded(t.begun.Thread.Processor, StatusFailed)
	return ev
}

// lost ends a turn whose commit failed (its lock was lost, the thread was
// deleted, the store is unreachable). The error event is logged on its own,
// so a reattached client learns the turn is over.
func (t *Turn) lost(ctx context.Context, err error, id int) Event {
	ev := failedEvent(id, storeFailure(err))
	logCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if lerr := t.e.store.AppendTurnEvents(logCtx, t.ref.ThreadID, t.ref.TurnID, []store.TurnEvent{ev.record()}); lerr != nil {
		t.e.warnStore("logging a turn's error event", lerr, "thread_id", t.ref.ThreadID, "turn_id", t.ref.TurnID)
	}
	return ev
}

// failedEvent is a turn's error event.
func failedEvent(id int, f *Failure) Event {
	data, err := blocks.Marshal(f)
	if err != nil {
		f = &Failure{Code: CodeInternal, Detail: "internal error", Err: err}
		data, _ = blocks.Marshal(f)
	}
	return Event{ID: id, Kind: EventError, Failure: f, data: data}
}

// release aborts a begun turn, logging events. A failed release is
// harmless: the lock expires with its TTL.
func (t *Turn) release(events []store.TurnEvent) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := t.e.store.Release(ctx, store.ReleaseTurn{
		ThreadID: t.ref.ThreadID, LockToken: t.begun.LockToken, TurnID: t.ref.TurnID, Start: t.first.record(), Events: events,
	})
	if err != nil {
		t.e.warnStore("releasing turn lock", err, "thread_id", t.ref.ThreadID)
	}
}
