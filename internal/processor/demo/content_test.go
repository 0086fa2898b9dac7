package demo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/processor"
)

func TestCardReply(t *testing.T) {
	p := newTestProcessor(t)
	out, _ := mustProcess(t, p, userInput("Show me a card"))
	require.Len(t, out.Blocks, 1)

	card := mustJSONObject(t, out.Blocks[0])
	assert.Equal(t, "resource_link", card["type"])
	assert.Equal(t, "entity:node/42", card["uri"])
	assert.Equal(t, cardTitle, card["title"], "block-unaware renderers show the label")
	meta, ok := card["_meta"].(map[string]any)
	require.True(t, ok, "entity card must carry _meta")
	assert.Equal(t, map[string]any{
		"entity_type": "node",
		"id":          "42",
		"uuid":        cardUUID,
		"view_mode":   "teaser",
	}, meta[blocks.MetaEntity])
}

func TestCancelledContextStopsStreaming(t *testing.T) {
	t.Run("before the first delta", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var deltas int
		_, err := newTestProcessor(t).Process(ctx, userInput("stream"), func(processor.Delta) { deltas++ })
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 0, deltas)
	})
	for _, delay := range []time.Duration{0, time.Hour} {
		t.Run("mid-stream, delay "+delay.String(), func(t *testing.T) {
			// With an hour between chunks the turn can only end because the
			// cancellation interrupts the wait.
			p := NewWithDelay(delay)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var deltas int
			_, err := p.Process(ctx, userInput("stream"), func(processor.Delta) {
				deltas++
				cancel()
			})
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, 1, deltas)
		})
	}
}

func TestChunksConcatenateToText(t *testing.T) {
	for _, text := range []string{"", "one", "one two three four", "  spaced  out  ", "line\nbreak and more words here", storyText} {
		got := chunks(text, wordsPerChunk)
		assert.Equal(t, text, strings.Join(got, ""))
		for _, c := range got {
			assert.NotEmpty(t, c)
		}
	}
}
