package turn

import (
	"context"
	"iter"
	"time"
)

// Events reads a turn's events from its log, after the one with ID after,
// then follows it live until its last event: the same events, with the same
// IDs and data, that the turn's own consumer had, on any instance that
// shares the store. Errors come before any event: store.ErrNotFound for a
// thread the principal does not own, store.ErrTurnNotFound for an unknown
// or expired turn, or the store's failure; a transport can still answer
// them with a status. Once events have come, the only error is ctx's: a
// log that ends without its last event (the instance running the turn
// died) or cannot be read ends with an error event instead.
func (e *Engine) Events(ctx context.Context, ref Ref, after int) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		yielded := false
		wait := time.Duration(0) // the first read only checks the turn exists
		for {
			records, ended, err := e.store.TurnEvents(ctx, ref.ThreadID, ref.Principal, ref.TurnID, after, wait)
			switch {
			case err != nil && yielded && ctx.Err() == nil:
				lost := turnLost
				yield(failedEvent(after+1, &lost), nil)
				return
			case err != nil:
				yield(Event{}, err)
				return
			}
			for _, rec := range records {
				ev, derr := decodeEvent(rec)
				if derr != nil {
					ev = failedEvent(rec.ID, &Failure{Code: CodeInternal, Detail: "internal error", Err: derr})
				}
				if !yield(ev, nil) {
					return
				}
				yielded, after = true, ev.ID
				if ev.Last() {
					return
				}
			}
			if ended {
				return // nothing after the last event asked for
			}
			if ctx.Err() != nil {
				yield(Event{}, ctx.Err())
				return
			}
			wait = followWait
		}
	}
}

// followWait bounds one wait for a followed turn's next events, so a follow
// notices its client leaving or the log expiring.
const followWait = 5 * time.Second
