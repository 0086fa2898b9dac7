package turn

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/store"
)

// Store is what the engine needs from persistence; internal/store's Memory
// and Redis provide it. Errors are store's sentinels, wrapped.
type Store interface {
	// GetThread returns the principal's thread and its pending elicitation.
	GetThread(ctx context.Context, threadID, principal string) (store.Thread, *store.Pending, error)
	// BeginTurn locks the thread for a plain turn: store.ErrNotFound,
	// ErrBusy (a *store.RunningError for the same idempotency key), or a
	// *store.PendingError; an idempotent replay takes no lock.
	BeginTurn(ctx context.Context, b store.BeginTurn) (store.TurnStart, error)
	// BeginResume claims the pending elicitation and locks the thread:
	// store.ErrNotFound, ErrBusy, ErrElicitationNotFound / Consumed / Expired.
	BeginResume(ctx context.Context, b store.BeginResume) (store.TurnStart, error)
	// CommitTurn writes a turn and releases its lock: store.ErrLockLost, ErrNotFound.
	CommitTurn(ctx context.Context, c store.Commit) error
	// Release aborts a begun turn, writing only its last events: store.ErrLockLost.
	Release(ctx context.Context, r store.ReleaseTurn) error
	// RenewLock extends a running turn's lock lease: store.ErrLockLost when
	// the lease lapsed and the thread may have been taken over.
	RenewLock(ctx context.Context, threadID, lockToken, turnID string, ttl time.Duration) error
	// AppendTurnEvents adds events to a running turn's log.
	AppendTurnEvents(ctx context.Context, threadID, turnID string, events []store.TurnEvent) error
	// TurnEvents reads a turn's log after an event ID, waiting up to wait
	// for more, and says whether the log has ended: store.ErrNotFound,
	// ErrTurnNotFound.
	TurnEvents(ctx context.Context, threadID, principal, turnID string, after int, wait time.Duration) ([]store.TurnEvent, bool, error)
}

// Observer records what turns do; the API's Prometheus metrics implement it.
type Observer interface {
	// TurnEnded counts a turn by processor and status (completed,
	// input_required, failed).
	TurnEnded(processor, status string)
	// Elicitation counts an elicitation event by processor: created,
	// accepted, declined, cancelled, expired.
	Elicitation(processor, event string)
}

// Config holds the engine's tunables.
type Config struct {
	ElicitationTTL time.Duration
	TurnTimeout    time.Duration
	// HistoryWindow is how many recent messages a processor gets.
	HistoryWindow int
	// FlushEvery spaces the writes of a streamed turn's deltas to its log.
	FlushEvery time.Duration
	// LockLease is the term of a turn's lock, renewed every third of it
	// while the turn runs: a crashed instance, or a Redis that restarted
	// and lost the renewals, frees the thread within one lease instead of
	// the turn timeout.
	LockLease time.Duration
}

// DefaultLockLease is CHATD_LOCK_LEASE's default (SPEC §11).
const DefaultLockLease = 10 * time.Second

// DefaultFlushEvery batches a streamed turn's logged deltas: at most one
// store round trip per 50 ms of streaming (SPEC §12).
const DefaultFlushEvery = 50 * time.Millisecond

// Deps are what an Engine is built from.
type Deps struct {
	Store      Store
	Processors *processor.Registry
	Observer   Observer
	Logger     *slog.Logger
	// EncodeError turns a failed turn's error into its error event's data
	// (the transports' problem JSON), so a replayed failure reads as the
	// live one did.
	EncodeError func(error) []byte
	Config      Config
}

// Engine begins and runs turns.
type Engine struct {
	store       Store
	processors  *processor.Registry
	obs         Observer
	log         *slog.Logger
	encodeError func(error) []byte
	cfg         Config
	// windows are the history windows of processors that read less than
	// cfg.HistoryWindow.
	windows map[string]int
}

// New returns an engine. Observer and Logger may be nil.
func New(d Deps) *Engine {
	e := &Engine{store: d.Store, processors: d.Processors, obs: d.Observer, log: d.Logger, encodeError: d.EncodeError, cfg: d.Config}
	if e.obs == nil {
		e.obs = nopObserver{}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.encodeError == nil {
		e.encodeError = func(err error) []byte { b, _ := json.Marshal(map[string]string{"detail": err.Error()}); return b }
	}
	if e.cfg.FlushEvery <= 0 {
		e.cfg.FlushEvery = DefaultFlushEvery
	}
	if e.cfg.LockLease <= 0 {
		e.cfg.LockLease = DefaultLockLease
	}
	e.windows = e.processors.Windows(e.cfg.HistoryWindow)
	return e
}

type nopObserver struct{}

func (nopObserver) TurnEnded(string, string)   {}
func (nopObserver) Elicitation(string, string) {}

// Errors a turn's consumers map to client answers.
var (
	// ErrIdempotencyConflict: an Idempotency-Key was reused with another
	// request body.
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")
)

// ProcessorError fails a turn because of its processor: it failed, timed
// out, panicked, or produced output that cannot be persisted. Detail is
// safe to show the client.
type ProcessorError struct {
	Detail string
	Err    error
}

func (e *ProcessorError) Error() string { return e.Detail + ": " + e.Err.Error() }

func (e *ProcessorError) Unwrap() error { return e.Err }

// Plain asks for a turn on a user's message.
type Plain struct {
	ThreadID  string
	Principal string
	Message   blocks.Message
	// IdempotencyKey, when set, makes the turn replayable; Fingerprint
	// identifies the request body it was made with.
	IdempotencyKey string
	Fingerprint    string
}

// Answer asks for the turn that answers a pending elicitation.
type Answer struct {
	ThreadID      string
	Principal     string
	ElicitationID string
	Result        elicit.Result
	// Meta is the answer's own _meta, kept on the recorded message.
	Meta map[string]any
}

// Turn is a begun turn: its lock is held until Run commits or releases it.
// A Turn whose Replay is set is an idempotent retry of a finished turn:
// nothing runs and Run must not be called.
type Turn struct {
	// Start is the data of the turn's first event.
	Start Start
	// Replay is the original TurnResult of an idempotent retry.
	Replay []byte

	e *Engine
	// first is the turn's first event (Start's JSON), encoded once for the
	// store's begin, its commit or release, and the sink.
	first       store.TurnEvent
	begun       store.TurnStart
	userMsg     blocks.Message
	input       processor.Input
	consumed    string
	answer      elicit.Action
	idempotency *store.Idempotency
}

// Begin starts a plain turn. Besides the store's errors it returns
// ErrIdempotencyConflict, and a *store.RunningError (errors.Is ErrBusy)
// when the same idempotency key's turn is still running with the same
// body — a retry that may follow that turn instead.
func (e *Engine) Begin(ctx context.Context, p Plain) (*Turn, error) {
	start := Start{ThreadID: p.ThreadID, TurnID: blocks.NewID(), MessageID: blocks.NewID(), UserMessageID: p.Message.ID}
	logged := e.turnBegin(start, p.Fingerprint)
	begun, err := e.store.BeginTurn(ctx, store.BeginTurn{
		ThreadID: p.ThreadID, Principal: p.Principal, IdempotencyKey: p.IdempotencyKey,
		LockTTL: e.cfg.LockLease, Window: e.cfg.HistoryWindow, WindowByProcessor: e.windows,
		Turn: logged,
	})
	var running *store.RunningError
	if errors.As(err, &running) && running.Fingerprint != p.Fingerprint {
		return nil, ErrIdempotencyConflict
	}
	if err != nil {
		return nil, err
	}
	if begun.Replay != nil {
		if begun.Replay.Fingerprint != p.Fingerprint {
			return nil, ErrIdempotencyConflict
		}
		return &Turn{Replay: begun.Replay.Result}, nil
	}
	t := &Turn{Start: start, first: logged.Start, e: e, begun: begun, userMsg: p.Message, input: processor.Input{Message: &p.Message}}
	if p.IdempotencyKey != "" {
		t.idempotency = &store.Idempotency{Principal: p.Principal, Key: p.IdempotencyKey, Fingerprint: p.Fingerprint}
	}
	return t, nil
}

// BeginAnswer validates an elicitation's answer and starts the turn that
// resumes the processor with it. It returns the store's errors, or a
// *blocks.ValidationError (with the elicitation still pending) for an
// answer that does not fit the question.
func (e *Engine) BeginAnswer(ctx context.Context, a Answer) (*Turn, error) {
	// Validate before claiming: a claim excludes every other answer while it
	// is held, so an invalid answer must be refused without taking one. This
	// read also answers for the thread first, so another principal's thread
	// looks exactly like a missing one whatever the elicitation ID.
	thread, pending, err := e.store.GetThread(ctx, a.ThreadID, a.Principal)
	if err != nil {
		return nil, err
	}
	if !blocks.IsCanonicalID(a.ElicitationID) {
		return nil, store.ErrElicitationNotFound
	}
	// An elicitation's request never changes, so the request validated here
	// is the one the claim below finds.
	var request *elicit.Request
	if pending != nil && pending.ElicitationID == a.ElicitationID {
		if request, err = decodeAndValidate(pending.Request, a.Result); err != nil {
			return nil, err
		}
	}
	// The recorded answer's ID is minted first: IDs are time-ordered, and
	// the answer comes before the reply.
	userMsgID := blocks.NewID()
	start := Start{ThreadID: a.ThreadID, TurnID: blocks.NewID(), MessageID: blocks.NewID(), UserMessageID: userMsgID}
	logged := e.turnBegin(start, "")
	begun, err := e.store.BeginResume(ctx, store.BeginResume{
		ThreadID: a.ThreadID, Principal: a.Principal, ElicitationID: a.ElicitationID,
		LockTTL: e.cfg.LockLease, Window: e.cfg.HistoryWindow, WindowByProcessor: e.windows,
		Turn: logged,
	})
	if expired := (*store.ExpiredError)(nil); errors.As(err, &expired) && expired.First {
		// Redis expires pending state silently, so an expiry is counted when
		// the first late answer discovers it, and only then.
		e.obs.Elicitation(thread.Processor, "expired")
	}
	if err != nil {
		return nil, err
	}
	t := &Turn{Start: start, first: logged.Start, e: e, begun: begun, consumed: a.ElicitationID, answer: a.Result.Action}
	if request == nil {
		// Defensive: a claim implies the read above saw this elicitation
		// pending (the read shows it even while another answer holds it),
		// but the request is taken from the claim if the read missed it.
		if request, err = decodeAndValidate(begun.Pending.Request, a.Result); err != nil {
			t.release(nil)
			return nil, err
		}
	}
	// The answer's own _meta is kept on the recorded message, beside the
	// record of the result.
	t.userMsg = blocks.Message{
		ID: start.UserMessageID, Role: blocks.RoleUser, Text: request.Describe(a.Result), Timestamp: blocks.Now(),
		Meta: withMeta(a.Meta, blocks.MetaElicitationResult, answerRecord(a.ElicitationID, a.Result)),
	}
	t.input = processor.Input{Resume: &processor.Resume{Request: request, Result: a.Result, State: begun.Pending.State}}
	return t, nil
}

// turnBegin is what the store records of a turn as it begins: its first
// event, logged with the lock.
func (e *Engine) turnBegin(start Start, fingerprint string) store.TurnBegin {
	data, _ := blocks.Marshal(start)
	return store.TurnBegin{ID: start.TurnID, Fingerprint: fingerprint, Start: store.TurnEvent{ID: 1, Name: NameStart, Data: data}}
}

// Run runs a begun turn to its end, handing sink every event in order:
// start, deltas, then completed or error. The turn does not depend on ctx's
// caller staying: it runs to completion, bounded by the turn timeout, and is
// persisted. stream says whether the consumer streams: only then are deltas
// emitted, and logged for reattachment (a turn answered as one JSON body
// logs only its first and last events). sink must not block for long; it is
// never called after Run returns.
func (t *Turn) Run(ctx context.Context, stream bool, sink func(Event)) {
	e := t.e
	thread := t.begun.Thread
	ctx = context.WithoutCancel(ctx)
	sink(Event{ID: 1, Kind: EventStart, Start: t.Start, Data: t.first.Data})

	// The lease is renewed while the processor runs; if it is lost, the
	// processor is stopped, since its commit would be refused anyway.
	leaseCtx, lost := t.keepLease(ctx)
	rec := newRecorder(e.store, e.log, thread.ID, t.Start.TurnID, stream, e.cfg.FlushEvery)
	seq := &sequence{last: 1}
	emit := func(d processor.Delta) {
		if !stream || (d.Text == "" && len(d.Meta) == 0) {
			// A turn answered as one body has no use for deltas: they are
			// neither numbered nor logged, so its log has no gaps.
			return
		}
		data, err := blocks.Marshal(Delta{Delta: d.Text, Meta: d.Meta})
		if err != nil {
			return
		}
		seq.emit(func(id int) {
			ev := Event{ID: id, Kind: EventDelta, Delta: d, Data: data}
			rec.add(ev)
			sink(ev)
		})
	}

	out, err := t.invoke(leaseCtx, emit)
	leaseErr := lost()
	if leaseErr != nil {
		err = leaseErr
	}
	id := seq.close()
	logged := rec.stop()
	var commit store.Commit
	var result encodedResult
	if err == nil {
		commit, result, err = t.buildCommit(out)
	}
	if leaseErr != nil {
		// Another turn may hold the thread now: nothing is written, and the
		// client hears it as the store's failure (503), not the processor's.
		e.obs.TurnEnded(thread.Processor, StatusFailed)
		sink(t.lost(ctx, leaseErr, id))
		return
	}
	if err != nil {
		sink(t.fail(ctx, err, id, logged))
		return
	}
	commit.Start, commit.Events = t.first, append(logged, store.TurnEvent{ID: id, Name: NameCompleted, Data: result.data, Last: true})
	if err := e.store.CommitTurn(ctx, commit); err != nil {
		e.obs.TurnEnded(thread.Processor, StatusFailed)
		sink(t.lost(ctx, err, id))
		return
	}
	status := StatusCompleted
	if commit.Pause != nil {
		status = StatusInputRequired
		e.obs.Elicitation(thread.Processor, "created")
	}
	e.obs.TurnEnded(thread.Processor, status)
	if t.answer != "" {
		e.obs.Elicitation(thread.Processor, answerEvent[t.answer])
	}
	sink(Event{ID: id, Kind: EventCompleted, Result: result.value, Data: result.data})
}

// sequence numbers a turn's events. Deltas come from the processor's
// goroutine; once the turn has taken its last ID, a late delta from a
// processor abandoned at its timeout is dropped.
type sequence struct {
	mu     sync.Mutex
	last   int
	closed bool
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

// close returns the ID of the turn's last event and drops later emits.
func (s *sequence) close() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.last + 1
}

// fail ends a turn whose processor failed: nothing is appended to history,
// the lock is released and the error event logged with the release.
func (t *Turn) fail(ctx context.Context, err error, id int, logged []store.TurnEvent) Event {
	var perr *ProcessorError
	if !errors.As(err, &perr) {
		perr = &ProcessorError{Detail: failureDetail(err), Err: err}
	}
	ev := Event{ID: id, Kind: EventError, Err: perr, Data: t.e.encodeError(perr)}
	t.release(append(logged, store.TurnEvent{ID: id, Name: NameError, Data: ev.Data, Last: true}))
	t.e.obs.TurnEnded(t.begun.Thread.Processor, StatusFailed)
	return ev
}

// failureDetail says safely why a processor failed: the turn timeout, or
// the detail a processor's *processor.Error offers its client.
func failureDetail(err error) string {
	var perr *processor.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the processor did not answer within the turn timeout"
	case errors.As(err, &perr) && perr.Detail != "":
		return perr.Detail
	}
	return "the processor failed to answer"
}

// lost ends a turn whose commit failed (its lock was lost, the thread was
// deleted, the store is unreachable). The error event is logged on its own,
// so a reattached client learns the turn is over.
func (t *Turn) lost(ctx context.Context, err error, id int) Event {
	ev := Event{ID: id, Kind: EventError, Err: err, Data: t.e.encodeError(err)}
	logCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if lerr := t.e.store.AppendTurnEvents(logCtx, t.begun.Thread.ID, t.Start.TurnID,
		[]store.TurnEvent{{ID: id, Name: NameError, Data: ev.Data, Last: true}}); lerr != nil {
		t.e.log.Warn("logging a turn's error event", "thread_id", t.begun.Thread.ID, "turn_id", t.Start.TurnID, "error", lerr.Error())
	}
	return ev
}

// release aborts a begun turn, logging events. A failed release is
// harmless: the lock expires with its TTL.
func (t *Turn) release(events []store.TurnEvent) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := t.e.store.Release(ctx, store.ReleaseTurn{
		ThreadID: t.begun.Thread.ID, LockToken: t.begun.LockToken, TurnID: t.Start.TurnID, Start: t.first, Events: events,
	})
	if err != nil {
		t.e.log.Warn("releasing turn lock", "thread_id", t.begun.Thread.ID, "error", err.Error())
	}
}

// Follow replays a turn's logged events after the one with ID after, then
// follows it live until its last event, handing each to sink. It returns
// store.ErrNotFound for a thread the principal does not own and
// store.ErrTurnNotFound for an unknown or expired turn — before sink is
// first called, so a transport can still answer with a status. A turn whose
// log expires before it ends (its instance died) ends the follow with
// store.ErrTurnNotFound after what was logged.
func (e *Engine) Follow(ctx context.Context, threadID, principal, turnID string, after int, sink func(store.TurnEvent)) error {
	wait := time.Duration(0) // the first read only checks the turn exists
	for {
		events, ended, err := e.store.TurnEvents(ctx, threadID, principal, turnID, after, wait)
		if err != nil {
			return err
		}
		for _, ev := range events {
			sink(ev)
			after = ev.ID
			if ev.Last {
				return nil
			}
		}
		if ended {
			return nil // nothing after the last event asked for
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait = followWait
	}
}

// followWait bounds one wait for a followed turn's next events, so a follow
// notices its client leaving or the log expiring.
const followWait = 5 * time.Second

// keepLease renews the turn's lock every third of the lease until stop is
// called. The returned context is cancelled when the lease is lost (taken
// over after it lapsed); stop returns that error (store.ErrLockLost), or nil.
// A renewal that fails because the store is unreachable is retried: the
// lease may yet be renewed in time, and if not the commit is refused.
func (t *Turn) keepLease(ctx context.Context) (context.Context, func() error) {
	lease := t.e.cfg.LockLease
	ctx, cancel := context.WithCancelCause(ctx)
	var (
		// mu is held by a renewal, so that stopping waits for one in flight.
		mu      sync.Mutex
		stopped bool
		warned  bool
		timer   *time.Timer
	)
	renew := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		rctx, rcancel := context.WithTimeout(ctx, lease/3)
		err := t.e.store.RenewLock(rctx, t.begun.Thread.ID, t.begun.LockToken, t.Start.TurnID, lease)
		rcancel()
		if errors.Is(err, store.ErrLockLost) {
			cancel(err)
			return
		}
		if err != nil && ctx.Err() == nil && !warned {
			// Once a turn: an unreachable store fails every running
			// turn's renewals, a few times a second each.
			warned = true
			t.e.log.Warn("renewing a turn's lock lease", "thread_id", t.begun.Thread.ID, "error", err.Error())
		}
		timer.Reset(lease / 3)
	}
	// A timer rather than a goroutine: most turns end before their first
	// renewal, and starting a goroutine per turn wakes an idle thread of the
	// runtime, a tenth of an in-process turn's CPU.
	mu.Lock()
	timer = time.AfterFunc(lease/3, renew)
	mu.Unlock()
	return ctx, func() error {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		err := context.Cause(ctx)
		cancel(nil)
		if errors.Is(err, store.ErrLockLost) {
			return err
		}
		return nil
	}
}
