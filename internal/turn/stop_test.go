package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// streamer streams words until it has sent n or its context ends; on a stop
// it answers as answer says.
type streamer struct {
	n     int
	every time.Duration
	// onStop: "error" returns the context's error, "answer" returns its own
	// output, "ignore" keeps sleeping past the grace.
	onStop string
	// causes records the cause each stopped run saw.
	causes chan error
}

func (streamer) Describe() string { return "streams words" }

func (s streamer) Process(ctx context.Context, _ processor.Input, emit processor.Emit) (processor.Output, error) {
	var text strings.Builder
	for i := range s.n {
		if i > 0 {
			select {
			case <-time.After(s.every):
			case <-ctx.Done():
				if s.causes != nil {
					s.causes <- context.Cause(ctx)
				}
				switch s.onStop {
				case "answer":
					return processor.Output{Text: text.String() + " [cut]", Meta: map[string]any{"example.com/x": 1}}, nil
				case "ignore":
					time.Sleep(time.Hour)
				}
				return processor.Output{}, ctx.Err()
			}
		}
		emit(processor.Delta{Text: "w "})
		text.WriteString("w ")
	}
	return processor.Output{Text: text.String()}, nil
}

// counter counts turns by status.
type counter struct {
	mu     sync.Mutex
	status map[string]int
}

func (c *counter) TurnEnded(_, status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == nil {
		c.status = map[string]int{}
	}
	c.status[status]++
}

func (*counter) Elicitation(string, string) {}

func (c *counter) count(status string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status[status]
}

func newStopEngine(tb testing.TB, st turn.Store, p processor.Processor, relay turn.Relay, obs turn.Observer) *turn.Engine {
	tb.Helper()
	reg, err := processor.NewRegistry(map[string]processor.Processor{"p": p}, "p")
	require.NoError(tb, err)
	return turn.New(turn.Deps{Store: st, Processors: reg, Relay: relay, Observer: obs})
}

func mustThread(tb testing.TB, st *store.Memory) string {
	tb.Helper()
	th := store.Thread{ID: blocks.NewID(), Owner: "alice", Processor: "p"}
	require.NoError(tb, st.CreateThread(context.Background(), th))
	return th.ID
}

// runUntilDeltas runs a streamed turn and calls stop once it has streamed
// n deltas; it returns every event.
func runUntilDeltas(tb testing.TB, e *turn.Engine, threadID string, n int, stop func(turnID string)) []turn.Event {
	tb.Helper()
	tr, err := e.Begin(context.Background(), turn.Plain{ThreadID: threadID, Principal: "alice",
		Message: blocks.NewMessage(blocks.RoleUser, "go", nil, nil), Stream: true})
	require.NoError(tb, err)
	var events []turn.Event
	deltas := 0
	for ev, err := range tr.Events(context.Background(), -1) {
		require.NoError(tb, err)
		events = append(events, ev)
		if ev.Kind == turn.EventDelta {
			if deltas++; deltas == n {
				stop(tr.ID())
			}
		}
	}
	return events
}

// streamedText concatenates the deltas of events.
func streamedText(events []turn.Event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Kind == turn.EventDelta {
			b.WriteString(ev.Delta.Text)
		}
	}
	return b.String()
}

// TestStopKeepsWhatTheProcessorHas: a stopped turn ends turn.completed with
// status stopped; it keeps the processor's answer when it gives one within
// the grace, else the text it streamed; its reply is marked stopped, the
// streamed text is a prefix of it, history has it, and the processor saw a
// cause it can tell from a timeout.
func TestStopKeepsWhatTheProcessorHas(t *testing.T) {
	for _, tt := range []struct {
		onStop   string
		wantText func(streamed string) string
	}{
		{"error", func(s string) string { return s }},
		{"answer", func(s string) string { return s + " [cut]" }},
		{"ignore", func(s string) string { return s }},
	} {
		t.Run(tt.onStop, func(t *testing.T) {
			st := store.NewMemory(store.Options{})
			obs := &counter{}
			causes := make(chan error, 1)
			e := newStopEngine(t, st, streamer{n: 1000, every: 20 * time.Millisecond, onStop: tt.onStop, causes: causes}, nil, obs)
			threadID := mustThread(t, st)
			events := runUntilDeltas(t, e, threadID, 3, func(turnID string) {
				id, err := e.Stop(context.Background(), threadID, "alice", "")
				assert.NoError(t, err)
				assert.Equal(t, turnID, id)
			})
			assert.ErrorIs(t, <-causes, processor.ErrStopped)
			last := events[len(events)-1]
			require.Equal(t, turn.EventCompleted, last.Kind)
			res := last.Result
			assert.Equal(t, turn.StatusStopped, res.Status)
			streamed := streamedText(events)
			assert.True(t, strings.HasPrefix(streamed, "w w w "), streamed)
			assert.Equal(t, tt.wantText(streamed), res.Message.Text)
			assert.Equal(t, true, res.Message.Meta[blocks.MetaStopped])
			assert.Equal(t, true, res.StructuredResponse.Meta[blocks.MetaStopped])
			assert.Equal(t, 1, obs.count(turn.StatusStopped))

			page, err := st.History(context.Background(), threadID, "alice", 10, "")
			require.NoError(t, err)
			require.Len(t, page.Messages, 2)
			assert.Equal(t, res.Message.Text, page.Messages[1].Text)
			th, pending, err := st.GetThread(context.Background(), threadID, "alice")
			require.NoError(t, err)
			assert.Nil(t, th.Running)
			assert.Nil(t, pending)
		})
	}
}

// TestStopReachesAnotherInstance: a stop asked of one engine reaches the
// turn another engine runs, through the relay they share.
func TestStopReachesAnotherInstance(t *testing.T) {
	st := store.NewMemory(store.Options{})
	bus := store.NewLocalBus()
	p := streamer{n: 1000, every: 20 * time.Millisecond, onStop: "error"}
	running := newStopEngine(t, st, p, bus, nil)
	other := newStopEngine(t, st, p, bus, nil)
	threadID := mustThread(t, st)
	events := runUntilDeltas(t, running, threadID, 2, func(string) {
		_, err := other.Stop(context.Background(), threadID, "alice", "")
		assert.NoError(t, err)
	})
	assert.Equal(t, turn.StatusStopped, events[len(events)-1].Result.Status)
}

// TestStopRefusals: a stop for a thread with no running turn, for a turn
// that is not the running one, or for another principal's thread changes
// nothing and says why.
func TestStopRefusals(t *testing.T) {
	st := store.NewMemory(store.Options{})
	e := newStopEngine(t, st, streamer{n: 1000, every: 20 * time.Millisecond}, nil, nil)
	threadID := mustThread(t, st)

	_, err := e.Stop(context.Background(), threadID, "alice", "")
	var notRunning *turn.NotRunningError
	require.ErrorAs(t, err, &notRunning)
	assert.Empty(t, notRunning.RunningTurnID)

	_, err = e.Stop(context.Background(), threadID, "mallory", "")
	assert.ErrorIs(t, err, store.ErrNotFound)

	events := runUntilDeltas(t, e, threadID, 1, func(turnID string) {
		other := blocks.NewID()
		_, err := e.Stop(context.Background(), threadID, "alice", other)
		require.ErrorAs(t, err, &notRunning)
		assert.Equal(t, turnID, notRunning.RunningTurnID)
		_, err = e.Stop(context.Background(), threadID, "mallory", turnID)
		assert.ErrorIs(t, err, store.ErrNotFound)
		_, err = e.Stop(context.Background(), threadID, "alice", turnID)
		assert.NoError(t, err)
		_, err = e.Stop(context.Background(), threadID, "alice", turnID)
		assert.NoError(t, err, "a repeated stop is answered alike")
	})
	assert.Equal(t, turn.StatusStopped, events[len(events)-1].Result.Status)
}

// TestStopOnDisconnect: a turn that asked to stop when its consumer leaves
// stops when the consumer's context ends; one that did not runs on.
func TestStopOnDisconnect(t *testing.T) {
	for _, stopOnDisconnect := range []bool{true, false} {
		st := store.NewMemory(store.Options{})
		e := newStopEngine(t, st, streamer{n: 10, every: 30 * time.Millisecond, onStop: "error"}, nil, nil)
		threadID := mustThread(t, st)
		ctx, leave := context.WithCancel(context.Background())
		defer leave()
		tr, err := e.Begin(ctx, turn.Plain{ThreadID: threadID, Principal: "alice",
			Message: blocks.NewMessage(blocks.RoleUser, "go", nil, nil), Stream: true, StopOnDisconnect: stopOnDisconnect})
		require.NoError(t, err)
		var last turn.Event
		for ev := range tr.Events(ctx, -1) {
			if ev.Kind == turn.EventDelta {
				leave()
			}
			last = ev
		}
		want := map[bool]string{true: turn.StatusStopped, false: turn.StatusCompleted}[stopOnDisconnect]
		require.NotNil(t, last.Result)
		assert.Equal(t, want, last.Result.Status)
		if !stopOnDisconnect {
			assert.Equal(t, strings.Repeat("w ", 10), last.Result.Message.Text)
		}
	}
}

// TestStopAsTheTurnCommits: a stop racing the turn's end gives a completed
// turn or a stopped one, never both: the status, the reply's mark and
// history agree.
func TestStopAsTheTurnCommits(t *testing.T) {
	st := store.NewMemory(store.Options{})
	e := newStopEngine(t, st, streamer{n: 2, every: time.Millisecond, onStop: "answer"}, nil, nil)
	for i := range 200 {
		threadID := mustThread(t, st)
		tr, err := e.Begin(context.Background(), turn.Plain{ThreadID: threadID, Principal: "alice",
			Message: blocks.NewMessage(blocks.RoleUser, "go", nil, nil), Stream: true})
		require.NoError(t, err)
		var last turn.Event
		for ev := range tr.Events(context.Background(), -1) {
			if ev.Kind == turn.EventDelta {
				go func() {
					_, err := e.Stop(context.Background(), threadID, "alice", "")
					var notRunning *turn.NotRunningError
					if err != nil && !errors.As(err, &notRunning) {
						t.Errorf("stop %d: %v", i, err)
					}
				}()
			}
			last = ev
		}
		require.Equal(t, turn.EventCompleted, last.Kind, "turn %d", i)
		_, marked := last.Result.Message.Meta[blocks.MetaStopped]
		assert.Equal(t, last.Result.Status == turn.StatusStopped, marked, "turn %d", i)
		page, err := st.History(context.Background(), threadID, "alice", 10, "")
		require.NoError(t, err)
		require.Len(t, page.Messages, 2)
		assert.Equal(t, last.Result.Message.Text, page.Messages[1].Text, "turn %d", i)
	}
}

// asker pauses with a confirm on its first message and echoes the rest.
type asker struct{}

func (asker) Describe() string { return "asks, then echoes" }

func (asker) Process(_ context.Context, in processor.Input, _ processor.Emit) (processor.Output, error) {
	if in.Message != nil && in.Message.Text == "ask" {
		req, err := elicit.NewRequest("Sure?", json.RawMessage(`{"type":"object","properties":{}}`), nil)
		if err != nil {
			return processor.Output{}, err
		}
		return processor.Output{Pause: &processor.Pause{Request: req}}, nil
	}
	if in.Resume != nil {
		return processor.Output{Text: "resumed"}, nil
	}
	return processor.Output{Text: "echo: " + in.Message.Text}, nil
}

// TestCancelPending: a turn that asks to cancel the pending question
// records the cancel as an answer would, without resuming the processor,
// then runs; the question cannot be answered after it. Without the flag a
// pending question still refuses the turn.
func TestCancelPending(t *testing.T) {
	st := store.NewMemory(store.Options{})
	obs := &elicitations{}
	e := newStopEngine(t, st, asker{}, nil, obs)
	threadID := mustThread(t, st)
	plain := func(text string, cancel bool) (*turn.Turn, error) {
		return e.Begin(context.Background(), turn.Plain{ThreadID: threadID, Principal: "alice",
			Message: blocks.NewMessage(blocks.RoleUser, text, nil, nil), CancelPending: cancel})
	}
	tr, err := plain("ask", false)
	require.NoError(t, err)
	paused := collect(t, tr.Events(context.Background(), -1))
	require.Equal(t, turn.StatusInputRequired, paused[len(paused)-1].Result.Status)
	eid := paused[len(paused)-1].Result.Message.Meta[blocks.MetaElicitationID].(string)

	_, err = plain("never mind", false)
	var pendingErr *store.PendingError
	require.ErrorAs(t, err, &pendingErr)

	tr, err = plain("never mind", true)
	require.NoError(t, err)
	events := collect(t, tr.Events(context.Background(), -1))
	res := events[len(events)-1].Result
	assert.Equal(t, "echo: never mind", res.Message.Text)

	page, err := st.History(context.Background(), threadID, "alice", 10, "")
	require.NoError(t, err)
	require.Len(t, page.Messages, 5)
	cancelled := page.Messages[2]
	assert.Equal(t, "Cancelled.", cancelled.Text)
	assert.Equal(t, map[string]any{"elicitation_id": eid, "action": "cancel"}, cancelled.Meta[blocks.MetaElicitationResult])
	assert.Equal(t, res.UserMessage.ID, page.Messages[3].ID)
	assert.Less(t, cancelled.ID, page.Messages[3].ID, "the cancel comes before the new message")
	assert.Equal(t, []string{"created", "cancelled"}, obs.events)

	_, err = e.BeginAnswer(context.Background(), turn.Answer{ThreadID: threadID, Principal: "alice", ElicitationID: eid,
		Result: elicit.Result{Action: elicit.Accept}})
	assert.ErrorIs(t, err, store.ErrElicitationConsumed)
}

// elicitations records elicitation events.
type elicitations struct {
	counter
	events []string
}

func (o *elicitations) Elicitation(_, event string) { o.events = append(o.events, event) }
