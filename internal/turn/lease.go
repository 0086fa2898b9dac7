package turn

import (
	"context"
	"errors"
	"sync"
	"time"

	"chatd/internal/store"
)

// keepLease renews the turn's lock every third of the lease until stop is
// called. The returned context is cancelled when the lease is lost (taken
// over after it lapsed); stop returns that error (store.ErrLockLost), or nil.
// A renewal that fails because the store is unreachable is retried: the
// lease may yet be renewed in time, and if not the commit is refused.
func (t *Turn) keepLease(ctx context.Context) (context.Context, func() error) {
	lease := t.e.cfg.LockLease
	ctx, cancel := context.WithCancelCause(ctx)
	// A stop ends the same context, with its own cause.
	t.stopper.attach(cancel)
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
		err := t.e.store.RenewLock(rctx, t.ref.ThreadID, t.begun.LockToken, t.ref.TurnID, lease)
		rcancel()
		if errors.Is(err, store.ErrLockLost) {
			cancel(err)
			return
		}
		if err != nil && ctx.Err() == nil && !warned {
			// Once a turn: an unreachable store fails every running
			// turn's renewals, a few times a second each.
			warned = true
			t.e.warnStore("renewing a turn's lock lease", err, "thread_id", t.ref.ThreadID)
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
