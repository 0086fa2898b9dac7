package turn

import (
	"context"
	"errors"
	"sync"
	"time"

	"chatd/internal/store"
)

// lease keeps a running turn's lock on its thread: it renews it every third
// of its term until stop. It is kept until the turn's commit or release is
// done, not only while the processor runs: the commit waits behind the
// flush of the turn's log, and a lease left to lapse meanwhile would have
// the commit refused.
type lease struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	// mu is held by a renewal, so that stopping waits for one in flight.
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

// keepLease starts renewing the turn's lock. The returned context is
// cancelled when the lease is lost (taken over after it lapsed), or by a
// stop of the turn. A renewal that fails because the store is unreachable
// is retried: the lease may yet be renewed in time, and if not the commit
// is refused.
func (t *Turn) keepLease(ctx context.Context) (context.Context, *lease) {
	term := t.e.cfg.LockLease
	l := &lease{}
	l.ctx, l.cancel = context.WithCancelCause(ctx)
	// A stop ends the same context, with its own cause.
	t.stopper.attach(l.cancel)
	warned := false
	renew := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.stopped {
			return
		}
		// On ctx, not the lease's context: a stopped turn still holds its
		// thread until it has committed what it streamed.
		rctx, rcancel := context.WithTimeout(ctx, term/3)
		err := t.e.store.RenewLock(rctx, t.ref.ThreadID, t.begun.LockToken, t.ref.TurnID, term)
		rcancel()
		if errors.Is(err, store.ErrLockLost) {
			l.cancel(err)
			return
		}
		if err != nil && !warned {
			// Once a turn: an unreachable store fails every running
			// turn's renewals, a few times a second each.
			warned = true
			t.e.warnStore("renewing a turn's lock lease", err, "thread_id", t.ref.ThreadID)
		}
		l.timer.Reset(term / 3)
	}
	// A timer rather than a goroutine: most turns end before their first
	// renewal, and starting a goroutine per turn wakes an idle thread of the
	// runtime, a tenth of an in-process turn's CPU.
	l.mu.Lock()
	l.timer = time.AfterFunc(term/3, renew)
	l.mu.Unlock()
	return l.ctx, l
}

// lost returns store.ErrLockLost when a renewal found the lease taken
// over, else nil. The lease is kept either way.
func (l *lease) lost() error {
	if err := context.Cause(l.ctx); errors.Is(err, store.ErrLockLost) {
		return err
	}
	return nil
}

// stop ends the renewals, waiting for one in flight.
func (l *lease) stop() {
	l.mu.Lock()
	l.stopped = true
	l.timer.Stop()
	l.mu.Unlock()
	l.cancel(nil)
}
