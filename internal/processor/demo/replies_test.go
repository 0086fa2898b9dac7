package demo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
)

func TestSuggestionsRouteToTheirCommand(t *testing.T) {
	for _, s := range allSuggestions {
		assert.Equal(t, s.cmd, parseCommand(s.text), "suggested reply %q", s.text)
	}
}

func TestSourcesCitationsPointAtBlocks(t *testing.T) {
	p := newTestProcessor(t)
	out, deltas := mustProcess(t, p, userInput("sources"))

	require.NotEmpty(t, deltas)
	progress := mustJSONObject(t, deltas[0].Meta)[blocks.MetaStatusItem]
	outcome := mustJSONObject(t, out.Meta)[blocks.MetaStatusItem]
	require.NotNil(t, progress, "the first delta shows progress")
	require.NotNil(t, outcome, "the message shows the outcome")
	assert.Equal(t, "running", progress.(map[string]any)["state"])
	assert.Equal(t, "done", outcome.(map[string]any)["state"])
	assert.Equal(t, progress.(map[string]any)["id"], outcome.(map[string]any)["id"], "the outcome replaces the progress item")
	for _, d := range deltas[1:] {
		assert.Nil(t, d.Meta)
	}

	citations := mustJSONObject(t, out.Meta)[blocks.MetaCitations]
	list, ok := citations.([]any)
	require.True(t, ok, "citations are an array, got %T", citations)
	require.Len(t, list, len(demoSources))
	for i, c := range list {
		cite, ok := c.(map[string]any)
		require.True(t, ok)
		assert.NotEmpty(t, cite["title"])
		assert.NotEmpty(t, cite["snippet"])
		idx, ok := cite["block_index"].(float64)
		require.True(t, ok, "block_index is a number")
		require.Less(t, int(idx), len(out.Blocks), "citation %d points past the blocks", i)
		block := mustJSONObject(t, out.Blocks[int(idx)])
		assert.Equal(t, "resource_link", block["type"])
		assert.Equal(t, cite["uri"], block["uri"])
		assert.Contains(t, out.Text, cite["uri"], "block-unaware readers see every source")
	}
}
