package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// windowArgs appends the history window to a begin script's arguments: the
// default, then processor name and window pairs for the script to match
// against the thread's processor.
func windowArgs(window int, byProcessor map[string]int, args ...any) []any {
	args = append(args, max(window, 0))
	for name, n := range byProcessor {
		args = append(args, name, max(n, 0))
	}
	return args
}

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
	k := keysFor(b.ThreadID)
	args := []any{b.Principal, field, token, b.LockTTL.Milliseconds(), b.Turn.ID, b.Turn.Fingerprint, lockRecord(b.Turn), time.Now().UnixMilli()}
	status, data, err := r.run(ctx, "begin turn", beginTurnScript,
		[]string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.idem, k.idemexp, k.hist},
		windowArgs(b.Window, b.WindowByProcessor, args...)...)
	if err != nil {
		return TurnStart{}, err
	}
	switch status {
	case "NOTFOUND":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrNotFound)
	case "BUSY":
		return TurnStart{}, fmt.Errorf("store: thread %s: %w", b.ThreadID, ErrBusy)
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
		history, err := encodedFromReply(data[threadFields:])
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{Thread: t, LockToken: token, History: history}, nil
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
	k := keysFor(b.ThreadID)
	args := []any{b.Principal, b.ElicitationID, token, b.LockTTL.Milliseconds(), b.Turn.ID, lockRecord(b.Turn), time.Now().UnixMilli()}
	status, data, err := r.run(ctx, "begin resume", beginResumeScript,
		[]string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.elicitations, k.hist},
		windowArgs(b.Window, b.WindowByProcessor, args...)...)
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
		history, err := encodedFromReply(data[threadFields+1:])
		if err != nil {
			return TurnStart{}, err
		}
		return TurnStart{Thread: t, LockToken: token, History: history, Pending: p}, nil
	}
	return TurnStart{}, unexpectedStatus("begin resume", status)
}

// CommitTurn writes a turn's outcome and releases its lock, all or nothing.
// It returns ErrNotFound when the thread was deleted, ErrLockLost when
// c.LockToken no longer holds the lock, and ErrUnavailable when Redis cannot
// be reached (the outcome is then unknown). A re-send of this call's script
// that finds its own commit done answers as the commit did.
func (r *Redis) CommitTurn(ctx context.Context, c Commit) error {
	enc, err := encodeMessages(c.Messages)
	if err != nil {
		return err
	}
	var pauseID, pauseData string
	var pauseExpires int64
	if c.Pause != nil {
		b, err := encodePending(*c.Pause)
		if err != nil {
			return err
		}
		pauseID, pauseData, pauseExpires = c.Pause.ElicitationID, string(b), c.Pause.ExpiresAt.UnixMilli()
	}
	var idemField, idemData string
	if c.Idempotency != nil {
		b, err := encodeIdempotency(*c.Idempotency)
		if err != nil {
			return err
		}
		idemField, idemData = idempotencyField(c.Idempotency.Principal, c.Idempotency.Key), string(b)
	}
	call, err := newCallID()
	if err != nil {
		return err
	}
	eventsTTL := int64(0)
	if c.TurnID != "" {
		eventsTTL = r.opts.TurnEventsTTL.Milliseconds()
	}
	now := time.Now()
	args := make([]any, 0, 18+2*len(enc))
	args = append(args,
		c.LockToken, formatTime(now), r.opts.HistoryMax, r.opts.ThreadTTL.Milliseconds(),
		c.Consumed, pauseID, pauseData, pauseExpires,
		idemField, idemData, r.opts.IdempotencyTTL.Milliseconds(),
		call, c.Preview, eventsTTL, len(enc))
	for _, e := range enc {
		args = append(args, e.id, e.data)
	}
	args = append(args, r.opts.HistoryMaxBytes)
	args = eventArgs(args, c.Start, c.Events)

	k := keysFor(c.ThreadID)
	keys := []string{k.thread, k.lock, k.pending, k.msgs, k.msgdata, k.elicitations, k.idem, k.idemexp, turnKey(c.ThreadID, c.TurnID), k.hist}
	index := func(redis.Pipeliner) {}
	if c.Owner != "" {
		index = r.touchIndex(c.Owner, c.ThreadID, now, true)
	}
	status, _, err := r.runWrite(ctx, "commit turn", commitScript, keys, args, index)
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

// Release ends a begun turn without writing its outcome, un-claiming the
// elicitation a resume claimed, and appends rel.Events to the turn's log. It
// returns ErrLockLost when rel.LockToken no longer holds the lock, which
// includes a re-send of a release that ran.
func (r *Redis) Release(ctx context.Context, rel ReleaseTurn) error {
	eventsTTL := int64(0)
	if rel.TurnID != "" {
		eventsTTL = r.opts.TurnEventsTTL.Milliseconds()
	}
	status, _, err := r.run(ctx, "release", releaseScript,
		[]string{keysFor(rel.ThreadID).lock, turnKey(rel.ThreadID, rel.TurnID)},
		eventArgs([]any{rel.LockToken, eventsTTL}, rel.Start, rel.Events)...)
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

// History returns one page of the thread's history; see Page. It returns
// ErrNotFound, ErrUnknownCursor when before is not in the history, or
// ErrUnavailable.
func (r *Redis) History(ctx context.Context, threadID, principal string, limit int, before string) (Page, error) {
	if err := checkLimit(limit); err != nil {
		return Page{}, err
	}
	k := keysFor(threadID)
	status, data, err := r.run(ctx, "history", historyScript, []string{k.thread, k.msgs, k.msgdata, k.hist}, principal, limit, before)
	if err != nil {
		return Page{}, err
	}
	switch status {
	case "OK":
	case "NOTFOUND":
		return Page{}, fmt.Errorf("store: thread %s: %w", threadID, ErrNotFound)
	case "BADCURSOR":
		return Page{}, fmt.Errorf("store: before %q: %w", before, ErrUnknownCursor)
	default:
		return Page{}, unexpectedStatus("history", status)
	}
	more, _ := data[0].(int64)
	msgs, err := messagesFromReply(data[1:])
	if err != nil {
		return Page{}, err
	}
	page := Page{Messages: msgs}
	if more == 1 && len(msgs) > 0 {
		page.NextBefore = msgs[0].ID
	}
	return page, nil
}

// RenewLock extends a running turn's lock lease to ttl from now, and its
// event log with it. It returns ErrLockLost when lockToken no longer holds
// the lock (the lease lapsed and another turn may have taken the thread),
// and ErrUnavailable when Redis cannot be reached.
func (r *Redis) RenewLock(ctx context.Context, threadID, lockToken, turnID string, ttl time.Duration) error {
	if err := checkLockTTL(ttl); err != nil {
		return err
	}
	status, _, err := r.run(ctx, "renew lock", renewScript,
		[]string{keysFor(threadID).lock, turnKey(threadID, turnID)},
		lockToken, ttl.Milliseconds(), r.opts.TurnEventsTTL.Milliseconds())
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
