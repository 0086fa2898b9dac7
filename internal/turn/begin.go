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
}

// Answer asks for the turn that answers a pending elicitation.
type Answer struct {
	ThreadID      string
	Principal     string
	ElicitationID string
	Result        elicit.Result
	// Meta is the answer's own _meta, kept on the recorded message.
	Meta map[string]any
	// Stream asks for the turn's deltas, as in Plain.
	Stream bool
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

	// first is the turn's first event, encoded once for the store's begin,
	// its commit or release, and the consumer.
	first       Event
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
	first, err := newEvent(1, EventStart, start)
	if err != nil {
		return nil, err
	}
	begun, err := e.store.BeginTurn(ctx, store.BeginTurn{
		ThreadID: p.ThreadID, Principal: p.Principal, IdempotencyKey: p.IdempotencyKey,
		LockTTL: e.cfg.LockLease, Window: e.cfg.HistoryWindow, WindowByProcessor: e.windows,
		Turn: store.TurnBegin{ID: start.TurnID, Fingerprint: p.Fingerprint, Start: first.record()},
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
		return e.replayed(p, begun.Replay.Result), nil
	}
	t := &Turn{e: e, ref: Ref{ThreadID: p.ThreadID, Principal: p.Principal, TurnID: start.TurnID}, stream: p.Stream,
		first: first, begun: begun, userMsg: p.Message, input: processor.Input{Message: &p.Message}}
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
	first, err := newEvent(1, EventStart, start)
	if err != nil {
		return nil, err
	}
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
		return nil, err
	}
	t := &Turn{e: e, ref: Ref{ThreadID: a.ThreadID, Principal: a.Principal, TurnID: start.TurnID}, stream: a.Stream,
		first: first, begun: begun, consumed: a.ElicitationID, answer: a.Result.Action}
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
	t.input = processor.Input{Resume: &processor.Resume{Request: request, Result: a.Result, State: begun.Pending.State, Message: t.userMsg}}
	return t, nil
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
