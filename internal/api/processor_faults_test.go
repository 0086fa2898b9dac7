package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/turn"

	"github.com/stretchr/testify/assert"
)

// fixedOutput answers every turn with the same output.
type fixedOutput struct{ out processor.Output }

func (fixedOutput) Describe() string { return "answers with a fixed output" }

func (f fixedOutput) Process(context.Context, processor.Input, processor.Emit) (processor.Output, error) {
	return f.out, nil
}

// TestUnpersistableOutputFailsTheTurn: output chatd cannot store as it is
// is the processor's failure (502), and nothing of the turn is kept.
func TestUnpersistableOutputFailsTheTurn(t *testing.T) {
	faults := map[string]processor.Output{
		"zero block":              {Text: "x", Blocks: []blocks.ContentBlock{{}}},
		"bad meta key":            {Text: "x", Meta: map[string]any{"no/good/key": 1}},
		"pause without a request": {Text: "x", Pause: &processor.Pause{}},
		"request without an id":   {Text: "x", Pause: &processor.Pause{Request: &elicit.Request{Message: "x", RequestedSchema: []byte(`{"type":"object","properties":{}}`)}}},
	}
	var opts []serverOption
	for name, out := range faults {
		opts = append(opts, withProcessor(name, fixedOutput{out}))
	}
	ts := newTestServer(t, opts...)
	for name := range faults {
		t.Run(name, func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, name)
			mustProblem(t, ts.postTurn(t, alice, thread, "hi"), http.StatusBadGateway, "processor_failed")
			assert.Empty(t, ts.mustHistory(t, alice, thread))
			assert.Nil(t, ts.mustThread(t, alice, thread).PendingElicitation)
		})
	}
}

// stubborn ignores its context and answers only when released.
type stubborn struct{ release chan struct{} }

func (stubborn) Describe() string { return "ignores cancellation" }

func (s stubborn) Process(context.Context, processor.Input, processor.Emit) (processor.Output, error) {
	<-s.release
	return processor.Output{Text: "too late"}, nil
}

// TestTimeoutHoldsForProcessorsThatIgnoreIt: the turn fails at its timeout
// although the processor is still running, and the thread is free again.
func TestTimeoutHoldsForProcessorsThatIgnoreIt(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ts := newTestServer(t, withProcessor("stubborn", stubborn{release}),
		withTurnConfig(func(c *turn.Config) { c.TurnTimeout = 300 * time.Millisecond }))
	thread := ts.mustCreateThread(t, alice, "stubborn")

	// The processor is still blocked when this returns: the answer cannot
	// have waited for it.
	resp := ts.postTurn(t, alice, thread, "hi")
	p := mustProblem(t, resp, http.StatusBadGateway, "processor_failed")
	assert.Contains(t, p.Detail, "turn timeout")
	assert.Empty(t, ts.mustHistory(t, alice, thread))
	// The lock was released with the failure, not left to expire.
	mustProblem(t, ts.postTurn(t, alice, thread, "again"), http.StatusBadGateway, "processor_failed")
}
