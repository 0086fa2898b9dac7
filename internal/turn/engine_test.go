package turn_test

import (
	"context"
	"strings"
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

// countingStore counts the writes of streamed deltas to turn logs.
type countingStore struct {
	*store.Memory
	appends atomic.Int64
}

func (c *countingStore) AppendTurnEvents(ctx context.Context, threadID, turnID string, events []store.TurnEvent) error {
	c.appends.Add(1)
	return c.Memory.AppendTurnEvents(ctx, threadID, turnID, events)
}

// chatty streams n deltas as fast as it can.
type chatty struct{ n int }

func (chatty) Describe() string { return "streams many deltas" }

func (c chatty) Process(_ context.Context, _ processor.Input, emit processor.Emit) (processor.Output, error) {
	for range c.n {
		emit(processor.Delta{Text: "x"})
	}
	return processor.Output{Text: strings.Repeat("x", c.n)}, nil
}

func newTestEngine(tb testing.TB, p processor.Processor) (*turn.Engine, *countingStore, string) {
	tb.Helper()
	st := &countingStore{Memory: store.NewMemory(store.Options{})}
	reg, err := processor.NewRegistry(map[string]processor.Processor{"p": p}, "p")
	require.NoError(tb, err)
	e := turn.New(turn.Deps{Store: st, Processors: reg, Config: turn.Config{TurnTimeout: time.Minute, ElicitationTTL: time.Minute}})
	th := store.Thread{ID: blocks.NewID(), Owner: "alice", Processor: "p"}
	require.NoError(tb, st.CreateThread(context.Background(), th))
	return e, st, th.ID
}

func run(tb testing.TB, e *turn.Engine, threadID string, stream bool) []turn.Event {
	tb.Helper()
	t, err := e.Begin(context.Background(), turn.Plain{ThreadID: threadID, Principal: "alice",
		Message: blocks.NewMessage(blocks.RoleUser, "go", nil, nil)})
	require.NoError(tb, err)
	var events []turn.Event
	t.Run(context.Background(), stream, func(ev turn.Event) { events = append(events, ev) })
	return events
}

// TestStreamedDeltasAreBatched: however fast a processor streams, its
// deltas reach the log in at most one write per flush interval, and the
// log holds every event the stream had, in order.
func TestStreamedDeltasAreBatched(t *testing.T) {
	e, st, threadID := newTestEngine(t, chatty{n: 5000})
	start := time.Now()
	events := run(t, e, threadID, true)
	elapsed := time.Since(start)
	require.Len(t, events, 5002)
	assert.Equal(t, turn.EventCompleted, events[len(events)-1].Kind)
	maxWrites := int64(elapsed/turn.DefaultFlushEvery) + 1
	assert.LessOrEqual(t, st.appends.Load(), maxWrites, "at most one write per %s over %s", turn.DefaultFlushEvery, elapsed)

	var logged []store.TurnEvent
	require.NoError(t, e.Follow(context.Background(), threadID, "alice", events[0].Start.TurnID, 0,
		func(ev store.TurnEvent) { logged = append(logged, ev) }))
	require.Len(t, logged, len(events))
	for i, ev := range events {
		assert.Equal(t, ev.ID, logged[i].ID)
		assert.Equal(t, ev.Name(), logged[i].Name)
		assert.Equal(t, string(ev.Data), string(logged[i].Data))
	}
}

// TestJSONTurnLogsItsEnds: a turn answered as one body emits and logs no
// deltas, only its first and last events, with no gap in the IDs.
func TestJSONTurnLogsItsEnds(t *testing.T) {
	e, st, threadID := newTestEngine(t, chatty{n: 100})
	events := run(t, e, threadID, false)
	require.Len(t, events, 2)
	assert.Equal(t, []int{1, 2}, []int{events[0].ID, events[1].ID})
	assert.Equal(t, turn.EventCompleted, events[1].Kind)
	assert.Equal(t, strings.Repeat("x", 100), events[1].Result.Message.Text)
	assert.Zero(t, st.appends.Load(), "nothing logged between begin and commit")
}
