package turn

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/store"
)

// Plain asks for a turn on a user's message.
type Plain struct {
	ThreadID  string
	Principal string
	Message   blocks.Message
	// IdempotencyKey, when set, makes the turn replayable; Fingerprint
	// identifies the request body it was made with.
	IdempotencyKey string
	Fingerprint    string
	// Stream asks for the turn's deltas: a consumer that answers with one
	// body has no use for them, and they are then neither emitted nor
	// logged.
	Stream bool
	// StopOnDisconnect stops the turn when the consumer's context ends
	// before the turn does (its client went away); otherwise the turn runs
	// on, to be reattached to.
	StopOnDisconnect bool
	// CancelPending cancels the thread's pending elicitation first,
	// recorded as an answered cancel without resuming the processor,
	// instead of refusing the turn with a *store.PendingError.
	CancelPending bool
	// Parent, when set, is the message the user's message follows: an
	// assistant message of the thread, or "" for a new first message.
	// Unset, it follows the head. A parent that is neither is a
	// *blocks.ValidationError of field parent_id.
	Parent *string
}

// Answer asks for the turn that answers a pending elicitation.
type Answer struct {
	ThreadID      string
	Principal     string
	ElicitationID string
	Result        elicit.Result
	// Meta is the answer's own _meta, kept on the recorded message.
	Meta map[string]any
	// Stream and StopOnDisconnect are as in Plain.
	Stream           bool
	StopOnDisconnect bool
}

// Turn is a begun turn, read through Events: its lock is held until the
// turn commits or releases it. A Turn may also be an idempotent retry of a
// finished turn, whose events are its original outcome and nothing runs.
type Turn struct {
	e      *Engine
	ref    Ref
	stream bool
	// replay is the original outcome of an idempotent retry; nil for a
	// turn that runs.
	replay *Event
	ran    atomic.Bool
	// out, seq and deltas carry the running turn's events to its consumer.
	out    outbox
	seq    sequence
	deltas deltaQueue
	// stopper stops the turn.
	stopper          *stopper
	stopOnDisconnect bool
	stopped          bool // set once a stop decided the turn's outcome

	// first is the turn's first event, encoded once for the store's begin,
	// its commit or release, and the consumer.
	first       Event
	begun       store.TurnStart
	userMsg     blocks.Message
	input       processor.Input
	consumed    string
	answer      elicit.Action
	idempotency *store.Idempotency
	// parent is the message the committed user message follows ("" for
	// none); regenerated marks a turn whose user message is already in
	// history, so only its reply is committed.
	parent      string
	regenerated bool
}

// Begin starts a plain turn. Besides the store's errors it returns
// ErrIdempotencyConflict, and a *store.RunningError (errors.Is ErrBusy)
// when the same idempotency key's turn is still running with the same
// body — a retry that may follow that turn instead.
func (e *Engine) Begin(ctx context.Context, p Plain) (*Turn, error) {
	t, err := e.begin(ctx, p)
	var pending *store.PendingError
	if errors.As(err, &pending) && p.CancelPending {
		if err := e.cancelPending(ctx, p, pending.Pending); err != nil {
			return nil, err
		}
		// The user's message comes after the cancel in history, and IDs
		// are time-ordered: it gets a new one.
		p.Message.ID, p.Message.Timestamp = blocks.NewID(), blocks.Now()
		t, err = e.begin(ctx, p)
	}
	return t, err
}

// begin takes the thread's lock for a plain turn, or finds its replay.
func (e *Engine) begin(ctx context.Context, p Plain) (*Turn, error) {
	b := branchStart{branch: p.Parent}
	if p.Parent != nil && *p.Parent != "" {
		if !blocks.IsCanonicalID(*p.Parent) {
			return nil, parentError("must be a message ID (a UUID) or null")
		}
		b.extra = 1
	}
	t, err := e.beginOn(ctx, p, b, checkParent)
	if errors.Is(err, store.ErrMessageNotFound) {
		return nil, parentError("names no message of the thread")
	}
	return t, err
}

// beginOn takes the thread's lock for a turn on the branch b names, or
// finds its replay; check sees the branch's last messages with the lock
// held, and a turn it refuses is released.
func (e *Engine) beginOn(ctx context.Context, p Plain, b branchStart, check func(*Turn, []blocks.Message) error) (*Turn, error) {
	start := Start{ThreadID: p.ThreadID, TurnID: blocks.NewID(), MessageID: blocks.NewID(), UserMessageID: p.Message.ID}
	first, err := newEvent(1, EventStart, start)
	if err != nil {
		return nil, err
	}
	stopper := e.stoppable(ctx, start.TurnID)
	window, byProcessor := e.widened(b.extra)
	begun, err := e.store.BeginTurn(ctx, store.BeginTurn{
		ThreadID: p.ThreadID, Principal: p.Principal, IdempotencyKey: p.IdempotencyKey,
		LockTTL: e.cfg.LockLease, Window: window, WindowByProcessor: byProcessor, Branch: b.branch,
		Turn: store.TurnBegin{ID: start.TurnID, Fingerprint: p.Fingerprint, Start: first.record()},
	})
	if err != nil || begun.Replay != nil {
		e.stops.unregister(start.TurnID)
	}
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
		return e.replayed(p, begun.Replay.Result), nil
	}
	t := &Turn{e: e, ref: Ref{ThreadID: p.ThreadID, Principal: p.Principal, TurnID: start.TurnID}, stream: p.Stream,
		stopper: stopper, stopOnDisconnect: p.StopOnDisconnect,
		first: first, begun: begun, userMsg: p.Message, parent: begun.Leaf}
	t.userMsg.ParentID = begun.Leaf
	t.input = processor.Input{Message: &t.userMsg}
	if err := t.trimWindow(b, check); err != nil {
		t.release(nil)
		e.stops.unregister(start.TurnID)
		return nil, err
	}
	if p.IdempotencyKey != "" {
		t.idempotency = &store.Idempotency{Principal: p.Principal, Key: p.IdempotencyKey, Fingerprint: p.Fingerprint}
	}
	return t, nil
}

// cancelPending records the pending elicitation as answered cancel, as an
// answer would, without resuming its processor: the user steered away from
// the question. It claims the question like an answer (another answer in
// progress is store.ErrBusy), writes no turn log, and commits the recorded
// answer alone.
func (e *Engine) cancelPending(ctx context.Context, p Plain, pending store.Pending) error {
	begun, err := e.store.BeginResume(ctx, store.BeginResume{
		ThreadID: p.ThreadID, Principal: p.Principal, ElicitationID: pending.ElicitationID, LockTTL: e.cfg.LockLease,
	})
	if err != nil {
		return err
	}
	request, err := elicit.DecodeStored(begun.Pending.Request)
	if err != nil {
		return fmt.Errorf("stored elicitation does not decode: %w", err)
	}
	cancel := elicit.Result{Action: elicit.Cancel}
	record := blocks.Message{ID: blocks.NewID(), Role: blocks.RoleUser, Text: request.Describe(cancel), Timestamp: blocks.Now(),
		Meta: map[string]any{blocks.MetaElicitationResult: answerRecord(pending.ElicitationID, cancel)}}
	if err := e.store.CommitTurn(ctx, store.Commit{
		ThreadID: p.ThreadID, Owner: begun.Thread.Owner, LockToken: begun.LockToken,
		Consumed: pending.ElicitationID, Messages: []blocks.Message{record}, Parent: &begun.Leaf,
	}); err != nil {
		return err
	}
	e.obs.Elicitation(begun.Thread.Processor, answerEvent[elicit.Cancel])
	return nil
}

// BeginAnswer validates an elicitation's answer and starts the turn that
// resumes the processor with it. It returns the store's errors, or a
// *blocks.ValidationError (with the elicitation still pending) for an
// answer that does not fit the question.
func (e *Engine) BeginAnswer(ctx context.Context, a Answer) (*Turn, error) {
	thread, request, err := e.checkAnswer(ctx, a)
	if err != nil {
		return nil, err
	}
	// The recorded answer's ID is minted first: IDs are time-ordered, and
	// the answer comes before the reply.
	userMsgID := blocks.NewID()
	start := Start{ThreadID: a.ThreadID, TurnID: blocks.NewID(), MessageID: blocks.NewID(), UserMessageID: userMsgID}
	first, err := newEvent(1, EventStart, start)
	if err != nil {
		return nil, err
	}
	stopper := e.stoppable(ctx, start.TurnID)
	begun, err := e.store.BeginResume(ctx, store.BeginResume{
		ThreadID: a.ThreadID, Principal: a.Principal, ElicitationID: a.ElicitationID,
		LockTTL: e.cfg.LockLease, Window: e.cfg.HistoryWindow, WindowByProcessor: e.windows,
		Turn: store.TurnBegin{ID: start.TurnID, Start: first.record()},
	})
	if expired := (*store.ExpiredError)(nil); errors.As(err, &expired) && expired.First {
		// Redis expires pending state silently, so an expiry is counted when
		// the first late answer discovers it, and only then.
		e.obs.Elicitation(thread.Processor, "expired")
	}
	if err != nil {
		e.stops.unregister(start.TurnID)
		return nil, err
	}
	t := &Turn{e: e, ref: Ref{ThreadID: a.ThreadID, Principal: a.Principal, TurnID: start.TurnID}, stream: a.Stream,
		stopper: stopper, stopOnDisconnect: a.StopOnDisconnect,
		first: first, begun: begun, consumed: a.ElicitationID, answer: a.Result.Action, parent: begun.Leaf}
	if request == nil {
		// Defensive: a claim implies the read above saw this elicitation
		// pending (the read shows it even while another answer holds it),
		// but the request is taken from the claim if the read missed it.
		if request, err = decodeAndValidate(begun.Pending.Request, a.Result); err != nil {
			t.release(nil)
			e.stops.unregister(start.TurnID)
			return nil, err
		}
	}
	t.answered(request, a)
	return t, nil
}

// checkAnswer validates an answer before it claims its elicitation: a
// claim excludes every other answer while it is held, so an invalid answer
// must be refused without taking one. The read also answers for the
// thread first, so another principal's thread looks exactly like a missing
// one whatever the elicitation ID. request is nil when the read did not
// find the elicitation pending.
func (e *Engine) checkAnswer(ctx context.Context, a Answer) (store.Thread, *elicit.Request, error) {
	thread, pending, err := e.store.GetThread(ctx, a.ThreadID, a.Principal)
	if err != nil {
		return store.Thread{}, nil, err
	}
	if !blocks.IsCanonicalID(a.ElicitationID) {
		return store.Thread{}, nil, store.ErrElicitationNotFound
	}
	// An elicitation's request never changes, so the request validated here
	// is the one the claim finds.
	if pending == nil || pending.ElicitationID != a.ElicitationID {
		return thread, nil, nil
	}
	request, err := decodeAndValidate(pending.Request, a.Result)
	return thread, request, err
}

// answered sets the turn's recorded answer and the processor's resume. The
// answer's own _meta is kept on the recorded message, beside the record of
// the result.
func (t *Turn) answered(request *elicit.Request, a Answer) {
	t.userMsg = blocks.Message{
		ID: t.first.Start.UserMessageID, ParentID: t.parent, Role: blocks.RoleUser, Text: request.Describe(a.Result), Timestamp: blocks.Now(),
		Meta: withMeta(a.Meta, blocks.MetaElicitationResult, answerRecord(a.ElicitationID, a.Result)),
	}
	t.input = processor.Input{Resume: &processor.Resume{Request: request, Result: a.Result, State: t.begun.Pending.State, Message: t.userMsg}}
}

// stoppable registers a turn about to begin, so a stop can reach it from
// the moment the store shows it running. The turn's instance listens for
// stops first; if it cannot yet (the store is unreachable), the turn can
// still be stopped from this instance, and the next turn tries again.
func (e *Engine) stoppable(ctx context.Context, turnID string) *stopper {
	if err := e.listenForStops(ctx); err != nil {
		e.warnStore("listening for stops", err)
	}
	return e.stops.register(turnID)
}

// replayed is the Turn of an idempotent retry of a finished turn: its
// original TurnResult, as one turn.completed event.
func (e *Engine) replayed(p Plain, result []byte) *Turn {
	ev := Event{ID: 1, Kind: EventCompleted, data: result}
	var err error
	if ev.Result, err = decodeResult(result); err != nil {
		ev = Event{ID: 1, Kind: EventError, Failure: &Failure{Code: CodeInternal, Detail: "internal error",
			Err: fmt.Errorf("replayed turn result: %w", err)}}
	}
	ref := Ref{ThreadID: p.ThreadID, Principal: p.Principal}
	if ev.Result != nil {
		ref.TurnID = ev.Result.TurnID
	}
	return &Turn{e: e, ref: ref, replay: &ev}
}
