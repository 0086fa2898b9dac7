package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// BeginTurn starts a plain turn; see the package documentation for the order
// of its checks. It returns ErrNotFound, ErrBusy, a *PendingError or
// ErrUnavailable.
func (r *Redis) BeginTurn(ctx context.Context, b BeginTurn) (TurnStart, error) {
	if err := checkLockTTL(b.LockTTL); err != nil {
		return TurnStart{}, err
	}
	token, err := newLockToken()
	if err != nil {
		return TurnStart{}, err
	}
	field := ""
	if b.IdempotencyKey != "" {
		field = idempotencyField(b.Principal, b.IdempotencyKey)
	}
	status, data, err := r.run(ctx, "begin turn", beginTurnCall{k: keysFor(b.ThreadID), principal: b.Principal,
		idemField: field, token: token, lockTTL: b.LockTTL, turn: b.Turn, started: time.Now(), branch: b.Branch,
		window: historyWindow{n: b.Window, byProcessor: b.WindowByProcessor}})
	if err != nil {
		return TurnStart{}, err
	}
	switch status {
	case "NOTFOUND":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrNotFound)
	case "BUSY":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrBusy)
	case "NOMESSAGE":
		return TurnStart{}, fmt.Errorf("store: message %q: %w", branchArg(b.Branch), ErrMessageNotFound)
	case "RUNNING":
		turn, _ := replyString(data[0])
		fingerprint, _ := replyString(data[1])
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, &RunningError{TurnID: turn, Fingerprint: fingerprint})
	case "PENDING":
		p, err := pendingFromReply(data[0])
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{}, &PendingError{Pending: *p}
	case "REPLAY":
		t, err := threadFromReply(b.ThreadID, data)
		if err != nil {
			return TurnStart{}, err
		}
		s, _ := replyString(data[threadFields])
		rec, err := decodeIdempotency([]byte(s))
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{Thread: t, Replay: rec}, nil
	case "OK":
		t, err := threadFromReply(b.ThreadID, data)
		if err != nil {
			return TurnStart{}, err
		}
		leaf, head, history, err := branchFromReply(data[threadFields:])
		if err != nil {
			return TurnStart{}, err
		}
		t.HeadID = head
		return TurnStart{Thread: t, LockToken: token, History: history, Leaf: leaf}, nil
	}
	return TurnStart{}, unexpectedStatus("begin turn", status)
}

// BeginResume starts the turn that answers elicitation b.ElicitationID by
// claiming it. It returns ErrNotFound, ErrBusy, ErrElicitationConsumed,
// ErrElicitationExpired, ErrElicitationNotFound or ErrUnavailable.
func (r *Redis) BeginResume(ctx context.Context, b BeginResume) (TurnStart, error) {
	if err := checkLockTTL(b.LockTTL); err != nil {
		return TurnStart{}, err
	}
	token, err := newLockToken()
	if err != nil {
		return TurnStart{}, err
	}
	status, data, err := r.run(ctx, "begin resume", beginResumeCall{k: keysFor(b.ThreadID), principal: b.Principal,
		elicitationID: b.ElicitationID, token: token, lockTTL: b.LockTTL, turn: b.Turn, started: time.Now(),
		window: historyWindow{n: b.Window, byProcessor: b.WindowByProcessor}})
	if err != nil {
		return TurnStart{}, err
	}
	switch status {
	case "NOTFOUND":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrNotFound)
	case "BUSY":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrBusy)
	case "CONSUMED":
		return TurnStart{}, elicitationStateError(b.ElicitationID, elicitationConsumed)
	case "EXPIRED":
		state := elicitationExpired
		if len(data) > 0 && data[0] == "first" {
			state = elicitationIssued
		}
		return TurnStart{}, elicitationStateError(b.ElicitationID, state)
	case "UNKNOWN":
		return TurnStart{}, elicitationStateError(b.ElicitationID, "")
	case "OK":
		t, err := threadFromReply(b.ThreadID, data)
		if err != nil {
			return TurnStart{}, err
		}
		p, err := pendingFromReply(data[threadFields])
		if err != nil {
			return TurnStart{}, err
		}
		leaf, head, history, err := branchFromReply(data[threadFields+1:])
		if err != nil {
			return TurnStart{}, err
		}
		t.HeadID = head
		return TurnStart{Thread: t, LockToken: token, History: history, Pending: p, Leaf: leaf}, nil
	}
	return TurnStart{}, unexpectedStatus("begin resume", status)
}

// CommitTurn writes a turn's outcome and releases its lock, all or nothing.
// It returns ErrNotFound when the thread was deleted, ErrLockLost when
// c.LockToken no longer holds the lock, and ErrUnavailable when Redis cannot
// be reached (the outcome is then unknown). A re-send of this call's script
// that finds its own commit done answers as the commit did.
func (r *Redis) CommitTurn(ctx context.Context, c Commit) error {
	call, err := r.commitCall(c)
	if err != nil {
		return err
	}
	index := func(redis.Pipeliner) {}
	if c.Owner != "" {
		index = r.touchIndex(c.Owner, c.ThreadID, call.updated, true)
	}
	status, _, err := r.holds.runWrite(ctx, "commit turn", call, index)
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "NOTFOUND":
		return fmt.Errorf("store: thread %s: %w", c.ThreadID, ErrNotFound)
	case "LOCKLOST":
		return fmt.Errorf("store: thread %s: %w", c.ThreadID, ErrLockLost)
	}
	return unexpectedStatus("commit turn", status)
}

// commitCall is the script call that writes c, with its records encoded
// and a new call ID.
func (r *Redis) commitCall(c Commit) (commitTurnCall, error) {
	call := commitTurnCall{k: keysFor(c.ThreadID), logKey: turnKey(c.ThreadID, c.TurnID), token: c.LockToken,
		updated: time.Now(), threadTTL: r.opts.ThreadTTL, historyMax: r.opts.HistoryMax, historyMaxBytes: r.opts.HistoryMaxBytes,
		consumed: c.Consumed, pause: c.Pause, idem: c.Idempotency, idemTTL: r.opts.IdempotencyTTL, preview: c.Preview,
		log: newLogBatch(c.Start, c.Events), parent: c.Parent}
	var err error
	if call.messages, err = encodeMessages(withParents(c.Messages, c.Parent)); err != nil {
		return commitTurnCall{}, err
	}
	if c.Pause != nil {
		if call.pauseJSON, err = encodePending(*c.Pause); err != nil {
			return commitTurnCall{}, err
		}
	}
	if c.Idempotency != nil {
		if call.idemJSON, err = encodeIdempotency(*c.Idempotency); err != nil {
			return commitTurnCall{}, err
		}
	}
	if c.TurnID != "" {
		call.eventsTTL = r.opts.TurnEventsTTL
	}
	call.callID, err = newCallID()
	return call, err
}

// Release ends a begun turn without writing its outcome, un-claiming the
// elicitation a resume claimed, and appends rel.Events to the turn's log. It
// returns ErrLockLost when rel.LockToken no longer holds the lock, which
// includes a re-send of a release that ran.
func (r *Redis) Release(ctx context.Context, rel ReleaseTurn) error {
	call := releaseTurnCall{lockKey: lockKey(rel.ThreadID), logKey: turnKey(rel.ThreadID, rel.TurnID), token: rel.LockToken,
		log: newLogBatch(rel.Start, rel.Events)}
	if rel.TurnID != "" {
		call.eventsTTL = r.opts.TurnEventsTTL
	}
	status, _, err := r.holds.run(ctx, "release", call)
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "LOCKLOST":
		return fmt.Errorf("store: thread %s: %w", rel.ThreadID, ErrLockLost)
	}
	return unexpectedStatus("release", status)
}

// History returns one page of the head's branch; see HistoryOf.
func (r *Redis) History(ctx context.Context, threadID, principal string, limit int, before string) (Page, error) {
	return r.HistoryOf(ctx, threadID, principal, PageRequest{Limit: limit, Before: before})
}

// RenewLock extends a running turn's lock lease to ttl from now, and its
// event log with it. It returns ErrLockLost when lockToken no longer holds
// the lock (the lease lapsed and another turn may have taken the thread),
// and ErrUnavailable when Redis cannot be reached.
func (r *Redis) RenewLock(ctx context.Context, threadID, lockToken, turnID string, ttl time.Duration) error {
	if err := checkLockTTL(ttl); err != nil {
		return err
	}
	status, _, err := r.holds.run(ctx, "renew lock", renewLockCall{lockKey: lockKey(threadID), logKey: turnKey(threadID, turnID),
		token: lockToken, lease: ttl, eventsTTL: r.opts.TurnEventsTTL})
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		return nil
	case "LOCKLOST":
		return fmt.Errorf("store: thread %s: %w", threadID, ErrLockLost)
	}
	return unexpectedStatus("renew lock", status)
}
