package turn_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/processor"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// slowLogStore holds the first append to a turn log, as a store whose pool
// is busy with other streams' appends would, until the turn's lease has
// been renewed several times after its processor answered (or, if it is
// not renewed, until it has lapsed many times over).
type slowLogStore struct {
	*store.Memory
	appending chan struct{} // closed when the first append begins
	answered  atomic.Bool
	renewals  atomic.Int64
	renewed   chan struct{}
	lease     time.Duration
	appends   atomic.Int64
}

func (s *slowLogStore) RenewLock(ctx context.Context, threadID, lockToken, turnID string, ttl time.Duration) error {
	err := s.Memory.RenewLock(ctx, threadID, lockToken, turnID, ttl)
	if s.answered.Load() && s.renewals.Add(1) == 3 {
		close(s.renewed)
	}
	return err
}

func (s *slowLogStore) AppendTurnEvents(ctx context.Context, threadID, turnID string, events []store.TurnEvent) error {
	if s.appends.Add(1) == 1 {
		close(s.appending)
		select {
		case <-s.renewed:
		case <-time.After(20 * s.lease):
		}
	}
	return s.Memory.AppendTurnEvents(ctx, threadID, turnID, events)
}

// answering streams one delta and answers once the delta's flush to the
// log has begun, telling the store it has.
type answering struct{ st *slowLogStore }

func (answering) Describe() string { return "streams a word and answers" }

func (a answering) Process(_ context.Context, _ processor.Input, emit processor.Emit) (processor.Output, error) {
	emit(processor.Delta{Text: "word"})
	<-a.st.appending
	a.st.answered.Store(true)
	return processor.Output{Text: "word"}, nil
}

// TestLeaseKeptUntilCommit: a streamed turn whose processor has answered
// still holds its thread while the last flush of its log waits on the
// store, well past the lease's term, and its commit then succeeds.
func TestLeaseKeptUntilCommit(t *testing.T) {
	const lease = 60 * time.Millisecond
	st := &slowLogStore{Memory: store.NewMemory(store.Options{}), renewed: make(chan struct{}),
		appending: make(chan struct{}), lease: lease}
	reg, err := processor.NewRegistry(map[string]processor.Processor{"p": answering{st}}, "p")
	require.NoError(t, err)
	e := turn.New(turn.Deps{Store: st, Processors: reg,
		Config: turn.Config{TurnTimeout: time.Minute, ElicitationTTL: time.Minute, LockLease: lease}})
	th := store.Thread{ID: blocks.NewID(), Owner: "alice", Processor: "p"}
	require.NoError(t, st.CreateThread(context.Background(), th))

	events := run(t, e, th.ID, true)
	last := events[len(events)-1]
	require.Nil(t, last.Failure, "the turn kept its hold: %+v", last.Failure)
	assert.Equal(t, turn.EventCompleted, last.Kind)
	page, err := st.History(context.Background(), th.ID, "alice", 10, "")
	require.NoError(t, err)
	assert.Len(t, page.Messages, 2, "the turn's messages were kept")
}
