package turn

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"chatd/internal/processor"
	"chatd/internal/store"
	"chatd/internal/throttle"
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
	// HistoryOf reads a page of one branch: store.ErrNotFound,
	// ErrUnknownCursor.
	HistoryOf(ctx context.Context, threadID, principal string, req store.PageRequest) (store.Page, error)
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

// UsageObserver is implemented by an Observer that also counts the model
// tokens turns spend.
type UsageObserver interface {
	// ModelTokens adds n tokens of kind (input, output) spent by
	// processor's model.
	ModelTokens(processor, model, kind string, n int64)
}

// Config holds the engine's settings; cmd/chatd fills it from the
// environment, starting from DefaultConfig.
type Config struct {
	// ElicitationTTL is how long a question waits for its answer.
	ElicitationTTL time.Duration
	// TurnTimeout bounds a turn, its processor and its commit.
	TurnTimeout time.Duration
	// HistoryWindow is how many recent messages a processor gets; zero
	// gives it none.
	HistoryWindow int
	// FlushEvery spaces the writes of a streamed turn's deltas to its log.
	FlushEvery time.Duration
	// LockLease is the term of a turn's lock, renewed every third of it
	// while the turn runs: a crashed instance, or a Redis that restarted
	// and lost the renewals, frees the thread within one lease instead of
	// the turn timeout.
	LockLease time.Duration
}

// DefaultConfig is the engine's defaults: the defaults of CHATD_ELICITATION_TTL,
// CHATD_TURN_TIMEOUT, CHATD_HISTORY_WINDOW and CHATD_LOCK_LEASE, and a
// streamed turn's deltas logged in batches of at most 50 ms.
var DefaultConfig = Config{
	ElicitationTTL: 15 * time.Minute,
	TurnTimeout:    60 * time.Second,
	HistoryWindow:  50,
	FlushEvery:     50 * time.Millisecond,
	LockLease:      10 * time.Second,
}

// withDefaults fills unset durations from DefaultConfig. A zero
// HistoryWindow is kept: it means processors get no history.
func (c Config) withDefaults() Config {
	d := DefaultConfig
	for _, f := range []struct{ v, def *time.Duration }{
		{&c.ElicitationTTL, &d.ElicitationTTL}, {&c.TurnTimeout, &d.TurnTimeout},
		{&c.FlushEvery, &d.FlushEvery}, {&c.LockLease, &d.LockLease},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return c
}

// Deps are what an Engine is built from.
type Deps struct {
	Store      Store
	Processors *processor.Registry
	// Relay carries stops to the instance running the turn; nil stops only
	// the turns of this instance (one instance, the embedded store).
	Relay    Relay
	Observer Observer
	Logger   *slog.Logger
	Config   Config
}

// Engine begins and runs turns, and reads their events back.
type Engine struct {
	store      Store
	processors *processor.Registry
	obs        Observer
	log        *slog.Logger
	cfg        Config
	// windows are the history windows of processors that read less than
	// cfg.HistoryWindow.
	windows map[string]int
	// storeWarnings limits the lines logged for writes the store refused
	// outside a request's answer: during an outage every running turn
	// meets one.
	storeWarnings *throttle.Log
	relay         Relay
	stops         stops
}

// New returns an engine. Observer and Logger may be nil; unset durations of
// the Config take DefaultConfig's.
func New(d Deps) *Engine {
	e := &Engine{store: d.Store, processors: d.Processors, obs: d.Observer, log: d.Logger, cfg: d.Config.withDefaults(),
		storeWarnings: throttle.NewLog(time.Second), relay: d.Relay}
	if e.obs == nil {
		e.obs = nopObserver{}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.windows = e.processors.Windows(e.cfg.HistoryWindow)
	return e
}

type nopObserver struct{}

func (nopObserver) TurnEnded(string, string)   {}
func (nopObserver) Elicitation(string, string) {}

// ErrIdempotencyConflict: an Idempotency-Key was reused with another
// request body.
var ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")

// warnStore logs a store write that failed outside any request's answer,
// at most one line a second (with the count of those held back).
func (e *Engine) warnStore(msg string, err error, attrs ...any) {
	ok, suppressed := e.storeWarnings.Allow(time.Now())
	if !ok {
		return
	}
	e.log.Warn(msg, append(attrs, "error", err.Error(), "suppressed", suppressed)...)
}
