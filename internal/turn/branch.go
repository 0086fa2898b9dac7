package turn

import (
	"context"
	"errors"

	"chatd/internal/blocks"
	"chatd/internal/store"
)

// ErrNotRegenerable: the message named for regeneration is not an
// assistant's reply to a plain user message (it is a user's message, a
// question, or the reply to an elicitation's answer, or the message it
// replies to is no longer stored).
var ErrNotRegenerable = errors.New("message cannot be regenerated")

// Regenerate asks for a new reply to the user message an assistant
// message answered: a turn in every respect, whose user message is that
// existing one and whose reply becomes a sibling of MessageID.
type Regenerate struct {
	ThreadID  string
	Principal string
	// MessageID is the assistant message to regenerate.
	MessageID string
	// IdempotencyKey, Fingerprint, Stream and StopOnDisconnect are as in
	// Plain.
	IdempotencyKey   string
	Fingerprint      string
	Stream           bool
	StopOnDisconnect bool
}

// branchStart is what a begin reads beyond a turn's window: the branch's
// last messages that the turn checks (none, the parent, or the reply to
// regenerate and its user message).
type branchStart struct {
	branch *string
	extra  int
}

// windowFor is the history window the thread's processor reads.
func (e *Engine) windowFor(processor string) int {
	if n, ok := e.windows[processor]; ok {
		return max(n, 0)
	}
	return max(e.cfg.HistoryWindow, 0)
}

// widened is the window a begin asks the store for, extra more messages
// than each processor reads.
func (e *Engine) widened(extra int) (int, map[string]int) {
	if extra == 0 {
		return e.cfg.HistoryWindow, e.windows
	}
	byProcessor := make(map[string]int, len(e.windows))
	for name, n := range e.windows {
		byProcessor[name] = max(n, 0) + extra
	}
	return max(e.cfg.HistoryWindow, 0) + extra, byProcessor
}

// Regenerate begins a turn that runs the processor again on the branch
// ending at the user message that message_id replies to. The store's 409s
// come first; then store.ErrMessageNotFound for a message the thread does
// not hold, and ErrNotRegenerable.
func (e *Engine) Regenerate(ctx context.Context, r Regenerate) (*Turn, error) {
	// The turn's first event names its user message, so the message the
	// reply answers is read before the begin; the begin's own read, under
	// the lock, is the one checked.
	page, err := e.store.HistoryOf(ctx, r.ThreadID, r.Principal, store.PageRequest{Limit: 2, Leaf: r.MessageID})
	if err != nil && !errors.Is(err, store.ErrUnknownCursor) {
		return nil, err
	}
	p := Plain{ThreadID: r.ThreadID, Principal: r.Principal, IdempotencyKey: r.IdempotencyKey, Fingerprint: r.Fingerprint,
		Stream: r.Stream, StopOnDisconnect: r.StopOnDisconnect}
	if len(page.Messages) == 2 {
		p.Message = page.Messages[0]
	}
	return e.beginOn(ctx, p, branchStart{branch: &r.MessageID, extra: 2}, func(t *Turn, tail []blocks.Message) error {
		if len(tail) < 2 || tail[len(tail)-2].ID != p.Message.ID {
			return ErrNotRegenerable
		}
		reply, user := tail[len(tail)-1], tail[len(tail)-2]
		if _, question := reply.Meta[blocks.MetaElicitationID]; reply.Role != blocks.RoleAssistant || question {
			return ErrNotRegenerable
		}
		if _, answer := user.Meta[blocks.MetaElicitationResult]; user.Role != blocks.RoleUser || answer {
			return ErrNotRegenerable
		}
		if user.ParentID == "" && len(tail) > 2 {
			user.ParentID = tail[len(tail)-3].ID
		}
		t.regenerated = true
		t.userMsg, t.parent = user, user.ParentID
		t.input.Message = &t.userMsg
		return nil
	})
}

// checkParent checks the branch a turn's parent_id names ends at an
// assistant message; the store has found it in the thread.
func checkParent(t *Turn, tail []blocks.Message) error {
	if len(tail) == 0 || tail[len(tail)-1].Role != blocks.RoleAssistant {
		return parentError("must name an assistant message of the thread, or be null")
	}
	return nil
}

// parentError is the validation error of a turn's parent_id.
func parentError(detail string) error {
	verr := &blocks.ValidationError{}
	verr.Add("parent_id", detail)
	return verr
}

// trimWindow checks the branch's tail with check (the lock held) and
// leaves the window the processor reads. A refused turn releases its lock
// without a trace in its log.
func (t *Turn) trimWindow(b branchStart, check func(*Turn, []blocks.Message) error) error {
	history := t.begun.History
	if b.extra > 0 {
		tail, err := history.Decode()
		if err != nil {
			return err
		}
		if err := check(t, tail); err != nil {
			return err
		}
		if t.regenerated {
			history = history[:len(history)-2]
		}
	}
	w := t.e.windowFor(t.begun.Thread.Processor)
	t.begun.History = history[max(0, len(history)-w):]
	return nil
}
