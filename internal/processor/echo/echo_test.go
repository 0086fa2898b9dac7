package echo_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/processor/echo"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run invokes echo with a user message and collects its deltas.
func run(tb testing.TB, ctx context.Context, text string, list ...blocks.ContentBlock) (processor.Output, []string, error) {
	tb.Helper()
	msg := blocks.NewMessage(blocks.RoleUser, text, list, nil)
	var deltas []string
	out, err := echo.New().Process(ctx, processor.Input{Message: &msg}, func(d processor.Delta) {
		deltas = append(deltas, d.Text)
	})
	return out, deltas, err
}

func TestPlainMessageEchoesTextAndBlocks(t *testing.T) {
	card, err := blocks.EntityCard("node", "7", "8d2f5b6e-3f0c-4c39-9a53-2f1b8e0b6a11", "")
	require.NoError(t, err)
	out, deltas, err := run(t, context.Background(), "hello <world> & you", blocks.Text("hi"), card)
	require.NoError(t, err)
	assert.Equal(t, "hello <world> & you", out.Text)
	assert.Equal(t, []string{"hello <world> & you"}, deltas)
	require.Len(t, out.Blocks, 2)
	assert.Equal(t, "text", out.Blocks[0].Type())
	assert.Equal(t, "resource_link", out.Blocks[1].Type())
	assert.Nil(t, out.Pause)
}

func TestBlocksDirective(t *testing.T) {
	out, _, err := run(t, context.Background(), `/blocks [{"type":"text","text":"a"},{"type":"resource_link","uri":"https://example.com/x","name":"x","x-extra":1}]`)
	require.NoError(t, err)
	assert.Equal(t, "blocks", out.Text)
	got, err := json.Marshal(out.Blocks)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"type":"text","text":"a"},{"type":"resource_link","uri":"https://example.com/x","name":"x","x-extra":1}]`, string(got))

	out, _, err = run(t, context.Background(), `/blocks [{"type":"image","data":"***","mimeType":"image/png"}]`)
	require.NoError(t, err, "invalid blocks are a completed reply, not a failure")
	assert.True(t, strings.HasPrefix(out.Text, "invalid blocks:"), out.Text)
	assert.Contains(t, out.Text, "blocks[0].data")
	assert.Empty(t, out.Blocks)
}

func TestElicitDirectivePausesAndResumeEchoesResult(t *testing.T) {
	out, _, err := run(t, context.Background(), `/elicit {"message":"Pick","requestedSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}`)
	require.NoError(t, err)
	require.NotNil(t, out.Pause)
	assert.Equal(t, "Pick", out.Pause.Request.Message)
	assert.Equal(t, "Pick", out.Text, "the paused reply restates the question")

	cases := []struct {
		name   string
		result elicit.Result
		want   string
	}{
		{"accept keeps the number as written", elicit.Result{Action: elicit.Accept, Content: map[string]any{"n": json.Number("1.0")}}, `{"action":"accept","content":{"n":1.0}}`},
		{"decline omits content", elicit.Result{Action: elicit.Decline}, `{"action":"decline"}`},
		{"cancel omits empty content", elicit.Result{Action: elicit.Cancel, Content: map[string]any{}}, `{"action":"cancel"}`},
		{"html is not escaped", elicit.Result{Action: elicit.Accept, Content: map[string]any{"s": "<b>&"}}, `{"action":"accept","content":{"s":"<b>&"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resumed, err := echo.New().Process(context.Background(), processor.Input{
				Resume: &processor.Resume{Request: out.Pause.Request, Result: tc.result},
			}, func(processor.Delta) {})
			require.NoError(t, err)
			assert.Equal(t, tc.want, resumed.Text)
			assert.Nil(t, resumed.Pause)
		})
	}
}

func TestElicitDirectiveRejectsInvalidRequests(t *testing.T) {
	for _, arg := range []string{
		`not json`,
		`{"message":"x","requestedSchema":{"type":"object","properties":{"o":{"type":"object"}}}}`,
		`{"message":"x","requestedSchema":{"type":"object","properties":{}},"mode":"url"}`,
	} {
		out, _, err := run(t, context.Background(), "/elicit "+arg)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(out.Text, "invalid elicitation:"), out.Text)
		assert.Nil(t, out.Pause)
	}
}

func TestSlowStreamsWordByWord(t *testing.T) {
	out, deltas, err := run(t, context.Background(), "/slow 1 the quick  brown fox")
	require.NoError(t, err)
	assert.Equal(t, "the quick  brown fox", out.Text)
	assert.Equal(t, out.Text, strings.Join(deltas, ""))
	assert.Equal(t, []string{"the ", "quick ", " ", "brown ", "fox"}, deltas)
}

func TestSlowHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	msg := blocks.NewMessage(blocks.RoleUser, "/slow 3600000 a b c", nil, nil)
	var deltas []string
	done := make(chan error, 1)
	go func() {
		_, err := echo.New().Process(ctx, processor.Input{Message: &msg}, func(d processor.Delta) { deltas = append(deltas, d.Text) })
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("slow did not stop when its context was cancelled")
	}
	assert.Equal(t, []string{"a "}, deltas)
}

func TestFailDirective(t *testing.T) {
	_, _, err := run(t, context.Background(), "/fail")
	assert.ErrorIs(t, err, echo.ErrRequested)
}
