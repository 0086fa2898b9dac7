package demo

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
)

func newTestProcessor(tb testing.TB) *Processor {
	tb.Helper()
	p := NewWithDelay(0)
	require.NoError(tb, p.fixedErr, "fixed demo content must build")
	return p
}

func userInput(text string) processor.Input {
	msg := blocks.NewMessage(blocks.RoleUser, text, nil, nil)
	return processor.Input{ThreadID: "thread-1", Principal: "alice", Message: &msg}
}

func resumeInput(req *elicit.Request, res elicit.Result, state []byte) processor.Input {
	return processor.Input{
		ThreadID:  "thread-1",
		Principal: "alice",
		Resume:    &processor.Resume{Request: req, Result: res, State: state},
	}
}

// mustProcess runs one turn and checks what every reply must satisfy: the
// deltas concatenate to the text, blocks survive an encode/decode round trip
// and the _meta keys are valid.
func mustProcess(tb testing.TB, p *Processor, in processor.Input) (processor.Output, []processor.Delta) {
	tb.Helper()
	var deltas []processor.Delta
	out, err := p.Process(context.Background(), in, func(d processor.Delta) { deltas = append(deltas, d) })
	require.NoError(tb, err)
	require.NotEmpty(tb, out.Text, "text is authoritative and must never be empty")

	var streamed strings.Builder
	for _, d := range deltas {
		streamed.WriteString(d.Text)
	}
	assert.Equal(tb, out.Text, streamed.String(), "deltas must concatenate to the text")

	if len(out.Blocks) > 0 {
		data, err := json.Marshal(out.Blocks)
		require.NoError(tb, err)
		decoded, err := blocks.DecodeList(data, "content_blocks")
		require.NoError(tb, err)
		again, err := json.Marshal(decoded)
		require.NoError(tb, err)
		assert.JSONEq(tb, string(data), string(again))
	}
	assert.NoError(tb, blocks.ValidateMeta(out.Meta, "_meta"))
	if out.Pause != nil {
		require.NotNil(tb, out.Pause.Request)
		data, err := json.Marshal(out.Pause.Request)
		require.NoError(tb, err)
		_, err = elicit.DecodeRequest(data)
		require.NoError(tb, err, "the paused request must decode as chatd would persist it")
	}
	return out, deltas
}

// mustJSONObject re-encodes v (a block or a _meta value) and decodes it as
// generic JSON, which is what a client sees.
func mustJSONObject(tb testing.TB, v any) map[string]any {
	tb.Helper()
	data, err := json.Marshal(v)
	require.NoError(tb, err)
	var out map[string]any
	require.NoError(tb, json.Unmarshal(data, &out))
	return out
}

func suggestedReplies(tb testing.TB, out processor.Output) []string {
	tb.Helper()
	v, ok := out.Meta[blocks.MetaSuggestedReplies]
	require.True(tb, ok, "reply should carry suggested replies")
	replies, ok := v.([]string)
	require.True(tb, ok, "suggested replies are an array of strings, got %T", v)
	return replies
}

// mustPause starts a turn that pauses and returns its output.
func mustPause(tb testing.TB, p *Processor, text string) processor.Output {
	tb.Helper()
	out, _ := mustProcess(tb, p, userInput(text))
	require.NotNil(tb, out.Pause, "%q should pause", text)
	return out
}

// schemaOf decodes a request's requestedSchema.
func schemaOf(tb testing.TB, req *elicit.Request) map[string]any {
	tb.Helper()
	var schema map[string]any
	require.NoError(tb, json.Unmarshal(req.RequestedSchema, &schema))
	return schema
}

func TestProcessWithoutMessageFails(t *testing.T) {
	p := newTestProcessor(t)
	_, err := p.Process(context.Background(), processor.Input{ThreadID: "thread-1"}, func(processor.Delta) {})
	assert.Error(t, err)
}

func TestConcurrentTurns(t *testing.T) {
	p := newTestProcessor(t)
	var wg sync.WaitGroup
	for _, text := range []string{"help", "card", "sources", "book", "delete", "tags", "stream", "???"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := p.Process(context.Background(), userInput(text), func(processor.Delta) {})
			assert.NoError(t, err)
			assert.NotEmpty(t, out.Text)
		}()
	}
	wg.Wait()
}
