package agent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/processor/agent"
)

func TestParseFileTokenLimit(t *testing.T) {
	const file = `agents:
  - name: capped
    base_url: http://127.0.0.1:11434/v1
    model: llama3.1
    max_tokens_per_turn: 20000
`
	f, err := agent.ParseFile("agents.yaml", []byte(file), testEnv)
	require.NoError(t, err)
	require.Len(t, f.Agents, 1)
	assert.Equal(t, int64(20000), f.Agents[0].Config.MaxTokensPerTurn)

	_, err = agent.ParseFile("agents.yaml", []byte(file[:len(file)-6]+"-1\n"), testEnv)
	assert.ErrorContains(t, err, "agents.yaml:5: agents[0].max_tokens_per_turn: must not be negative")
}
