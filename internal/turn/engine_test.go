package turn_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
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
	return runPlain(tb, e, turn.Plain{ThreadID: threadID, Principal: "alice",
		Message: blocks.NewMessage(blocks.RoleUser, "go", nil, nil), Stream: stream})
}

func runPlain(tb testing.TB, e *turn.Engine, p turn.Plain) []turn.Event {
	tb.Helper()
	t, err := e.Begin(context.Background(), p)
	require.NoError(tb, err)
	return collect(tb, t.Events(context.Background(), -1))
}

// collect ranges over events, which must hold no error.
func collect(tb testing.TB, events iter.Seq2[turn.Event, error]) []turn.Event {
	tb.Helper()
	var out []turn.Event
	for ev, err := range events {
		require.NoError(tb, err)
		out = append(out, ev)
	}
	return out
}

// requireSameEvents checks that two reads of a turn saw the same events.
func requireSameEvents(tb testing.TB, want, got []turn.Event) {
	tb.Helper()
	require.Len(tb, got, len(want))
	for i, ev := range want {
		assert.Equal(tb, ev.ID, got[i].ID)
		assert.Equal(tb, ev.Kind, got[i].Kind)
		assert.Equal(tb, string(ev.Data()), string(got[i].Data()))
	}
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
	maxWrites := int64(elapsed/turn.DefaultConfig.FlushEvery) + 1
	assert.LessOrEqual(t, st.appends.Load(), maxWrites, "at most one write per %s over %s", turn.DefaultConfig.FlushEvery, elapsed)

	ref := turn.Ref{ThreadID: threadID, Principal: "alice", TurnID: events[0].Start.TurnID}
	logged := collect(t, e.Events(context.Background(), ref, 0))
	requireSameEvents(t, events, logged)
	assert.Equal(t, events[1].Delta, logged[1].Delta, "read back as typed events")
	assert.Equal(t, events[len(events)-1].Result.Message.Text, logged[len(logged)-1].Result.Message.Text)

	after := collect(t, e.Events(context.Background(), ref, 4990))
	requireSameEvents(t, events[4990:], after)
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

// failing fails every turn with a detail for its client.
type failing struct{}

func (failing) Describe() string { return "fails" }

func (failing) Process(context.Context, processor.Input, processor.Emit) (processor.Output, error) {
	return processor.Output{}, &processor.Error{Detail: "the model is down", Err: errors.New("connection refused")}
}

// TestFailedTurnReadsBackAsItsFailure: a failed turn's error event carries
// the engine's own failure (code and detail, its cause kept for logs), and
// its log gives back the same failure, without the cause.
func TestFailedTurnReadsBackAsItsFailure(t *testing.T) {
	e, _, threadID := newTestEngine(t, failing{})
	events := run(t, e, threadID, true)
	require.Len(t, events, 2)
	last := events[1]
	require.Equal(t, turn.EventError, last.Kind)
	assert.Equal(t, turn.CodeProcessorFailed, last.Failure.Code)
	assert.Equal(t, "the model is down", last.Failure.Detail)
	assert.ErrorContains(t, last.Failure, "connection refused")
	assert.JSONEq(t, `{"code":"processor_failed","detail":"the model is down"}`, string(last.Data()))

	logged := collect(t, e.Events(context.Background(), turn.Ref{ThreadID: threadID, Principal: "alice", TurnID: events[0].Start.TurnID}, 0))
	requireSameEvents(t, events, logged)
	assert.Equal(t, "the model is down", logged[1].Failure.Detail)
	assert.Nil(t, logged[1].Failure.Err)
}

// TestReplayIsTheOriginalOutcome: an idempotent retry runs nothing and
// reads as the original turn.completed, or, after an event the client has,
// as the original turn's logged events after it.
func TestReplayIsTheOriginalOutcome(t *testing.T) {
	e, _, threadID := newTestEngine(t, chatty{n: 3})
	p := turn.Plain{ThreadID: threadID, Principal: "alice", Message: blocks.NewMessage(blocks.RoleUser, "go", nil, nil),
		IdempotencyKey: "k", Fingerprint: "f", Stream: true}
	first := runPlain(t, e, p)
	require.Len(t, first, 5)

	p.Message = blocks.NewMessage(blocks.RoleUser, "go", nil, nil)
	retry := runPlain(t, e, p)
	require.Len(t, retry, 1)
	assert.Equal(t, turn.EventCompleted, retry[0].Kind)
	assert.Equal(t, string(first[4].Data()), string(retry[0].Data()))
	assert.Equal(t, first[4].Result.TurnID, retry[0].Result.TurnID)

	again, err := e.Begin(context.Background(), p)
	require.NoError(t, err)
	requireSameEvents(t, first[2:], collect(t, again.Events(context.Background(), 2)))

	p.Fingerprint = "another body"
	_, err = e.Begin(context.Background(), p)
	assert.ErrorIs(t, err, turn.ErrIdempotencyConflict)
}

// TestConsumerThatStopsLeavesTheTurnRunning: a consumer that stops ranging
// after the first event does not stop the turn: it completes and is
// committed, and its log ends.
func TestConsumerThatStopsLeavesTheTurnRunning(t *testing.T) {
	e, st, threadID := newTestEngine(t, chatty{n: 50})
	tr, err := e.Begin(context.Background(), turn.Plain{ThreadID: threadID, Principal: "alice",
		Message: blocks.NewMessage(blocks.RoleUser, "go", nil, nil), Stream: true})
	require.NoError(t, err)
	for range tr.Events(context.Background(), -1) {
		break
	}
	page, err := st.History(context.Background(), threadID, "alice", 10, "")
	require.NoError(t, err)
	require.Len(t, page.Messages, 2)
	assert.Equal(t, strings.Repeat("x", 50), page.Messages[1].Text)
	logged := collect(t, e.Events(context.Background(), turn.Ref{ThreadID: threadID, Principal: "alice", TurnID: tr.ID()}, 0))
	assert.Len(t, logged, 52)
	assert.True(t, logged[51].Last())
}

// TestEventsOfAnUnknownTurn: reading a turn that does not exist is an
// error before any event, so a transport can still answer with a status.
func TestEventsOfAnUnknownTurn(t *testing.T) {
	e, _, threadID := newTestEngine(t, chatty{n: 1})
	for _, ref := range []turn.Ref{
		{ThreadID: threadID, Principal: "alice", TurnID: blocks.NewID()},
		{ThreadID: threadID, Principal: "mallory", TurnID: blocks.NewID()},
	} {
		var errs []error
		for ev, err := range e.Events(context.Background(), ref, 0) {
			assert.Zero(t, ev)
			errs = append(errs, err)
		}
		require.Len(t, errs, 1)
		assert.True(t, errors.Is(errs[0], store.ErrTurnNotFound) || errors.Is(errs[0], store.ErrNotFound), errs[0])
	}
}

// downStore is a store that has gone away after the turns began: every
// write fails as an outage does.
type downStore struct{ *countingStore }

func (downStore) CommitTurn(context.Context, store.Commit) error {
	return fmt.Errorf("commit: %w", store.ErrUnavailable)
}

func (downStore) AppendTurnEvents(context.Context, string, string, []store.TurnEvent) error {
	return fmt.Errorf("append: %w", store.ErrUnavailable)
}

// TestStoreOutageWarningsAreThrottled: when the store goes away, every
// running turn fails to log its error event, and the engine says so in at
// most one line a second, with the count of the lines it held back.
func TestStoreOutageWarningsAreThrottled(t *testing.T) {
	const turns = 20
	var logs bytes.Buffer
	base := &countingStore{Memory: store.NewMemory(store.Options{})}
	reg, err := processor.NewRegistry(map[string]processor.Processor{"p": chatty{n: 1}}, "p")
	require.NoError(t, err)
	e := turn.New(turn.Deps{Store: downStore{base}, Processors: reg, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	var begun []*turn.Turn
	for range turns {
		th := store.Thread{ID: blocks.NewID(), Owner: "alice", Processor: "p"}
		require.NoError(t, base.CreateThread(context.Background(), th))
		tr, err := e.Begin(context.Background(), turn.Plain{ThreadID: th.ID, Principal: "alice",
			Message: blocks.NewMessage(blocks.RoleUser, "go", nil, nil), Stream: true})
		require.NoError(t, err)
		begun = append(begun, tr)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, tr := range begun {
		wg.Go(func() {
			events := collect(t, tr.Events(context.Background(), -1))
			assert.Equal(t, turn.CodeStoreUnavailable, events[len(events)-1].Failure.Code)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.NotEmpty(t, lines[0], "the outage is logged")
	assert.LessOrEqual(t, len(lines), int(elapsed/time.Second)+1, "at most one line a second over %s: %s", elapsed, logs.String())
	assert.Contains(t, lines[0], `"msg":"logging a turn's error event"`)
	assert.Contains(t, lines[0], `"suppressed":0`)
}
