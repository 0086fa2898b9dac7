package turn

import (
	"context"
	"errors"
	"sync"

	"chatd/internal/blocks"
	"chatd/internal/processor"
	"chatd/internal/store"
)

// Relay reaches the other instances that share the store: a stop asked of
// one instance is published for the instance running the turn. Redis
// pub/sub provides it (store.Redis's relay), and store.LocalBus within one
// process.
type Relay interface {
	// Publish sends payload to the channel's current subscribers.
	Publish(ctx context.Context, channel string, payload []byte) (int, error)
	// Subscribe delivers the channel's messages published after it returns.
	Subscribe(ctx context.Context, channel string) (*store.Subscription, error)
}

// stopChannel carries the IDs of turns to stop to every instance; each
// stops the ones it runs. One channel for all turns, subscribed once per
// instance, so a turn that is never stopped costs the store nothing.
const stopChannel = "chatd:turn-stops"

// NotRunningError answers a stop for a thread with no running turn, or for
// a turn that is not the running one. RunningTurnID names the running turn,
// empty when none runs.
type NotRunningError struct {
	RunningTurnID string
}

func (e *NotRunningError) Error() string {
	if e.RunningTurnID == "" {
		return "no turn is running on this thread"
	}
	return "the turn is not the thread's running turn " + e.RunningTurnID
}

// Stop stops the thread's running turn, from whichever instance runs it:
// the turn's processor is cancelled with processor.ErrStopped as its cause,
// and what it returns is committed as the turn's stopped outcome. turnID,
// when set, must name the running turn. Stop answers from the thread's
// shared state without waiting for the turn: it returns the running turn's
// ID, store.ErrNotFound for a thread the principal does not own, or a
// *NotRunningError. A turn that ends as the stop arrives ends completed or
// stopped, never both.
func (e *Engine) Stop(ctx context.Context, threadID, principal, turnID string) (string, error) {
	thread, _, err := e.store.GetThread(ctx, threadID, principal)
	if err != nil {
		return "", err
	}
	if thread.Running == nil {
		return "", &NotRunningError{}
	}
	running := thread.Running.ID
	if turnID != "" && turnID != running {
		return "", &NotRunningError{RunningTurnID: running}
	}
	if e.stops.stop(running) || e.relay == nil {
		return running, nil
	}
	if _, err := e.relay.Publish(ctx, stopChannel, []byte(running)); err != nil {
		return "", err
	}
	return running, nil
}

// stops are the turns this instance runs, by ID, so a stop can reach them.
type stops struct {
	mu    sync.Mutex
	turns map[string]*stopper
	// listening is set once this instance has subscribed to stopChannel.
	listening bool
}

// stopper stops one running turn. A stop that arrives before the turn's
// processor starts is kept, and stops it as it starts.
type stopper struct {
	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	stopped bool
	// settled is set once the turn's outcome is decided: a later stop
	// changes nothing.
	settled bool
}

// register makes a turn stoppable, until unregister.
func (s *stops) register(turnID string) *stopper {
	st := &stopper{}
	s.mu.Lock()
	if s.turns == nil {
		s.turns = map[string]*stopper{}
	}
	s.turns[turnID] = st
	s.mu.Unlock()
	return st
}

// unregister ends a turn's registration.
func (s *stops) unregister(turnID string) {
	s.mu.Lock()
	delete(s.turns, turnID)
	s.mu.Unlock()
}

// stop stops the turn if this instance runs it, and reports whether it does.
func (s *stops) stop(turnID string) bool {
	s.mu.Lock()
	st := s.turns[turnID]
	s.mu.Unlock()
	if st == nil {
		return false
	}
	st.stop()
	return true
}

func (st *stopper) stop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.settled {
		return
	}
	st.stopped = true
	if st.cancel != nil {
		st.cancel(processor.ErrStopped)
	}
}

// attach makes a stop cancel the turn's running context (the one its
// lease keeps) with processor.ErrStopped, at once if it already came.
func (st *stopper) attach(cancel context.CancelCauseFunc) {
	st.mu.Lock()
	st.cancel = cancel
	if st.stopped {
		cancel(processor.ErrStopped)
	}
	st.mu.Unlock()
}

// settle decides the turn's outcome: it reports whether the turn was
// stopped, and no stop after it counts.
func (st *stopper) settle() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.settled = true
	return st.stopped
}

// listenForStops subscribes this instance to stopChannel, once; a failed
// subscription is tried again by the next turn. A turn runs only once its
// instance listens, so a stop published while it runs reaches it.
func (e *Engine) listenForStops(ctx context.Context) error {
	if e.relay == nil {
		return nil
	}
	e.stops.mu.Lock()
	defer e.stops.mu.Unlock()
	if e.stops.listening {
		return nil
	}
	sub, err := e.relay.Subscribe(context.WithoutCancel(ctx), stopChannel)
	if err != nil {
		return err
	}
	e.stops.listening = true
	go func() {
		for data := range sub.C {
			if id := string(data); blocks.IsCanonicalID(id) {
				e.stops.stop(id)
			}
		}
		// The subscription ended (the store went away for good): the next
		// turn subscribes again.
		e.stops.mu.Lock()
		e.stops.listening = false
		e.stops.mu.Unlock()
	}()
	return nil
}

// errStopped marks the output of a stopped turn whose processor did not
// answer within processor.StopGrace.
var errStopped = errors.New("the stopped processor did not answer in time")
