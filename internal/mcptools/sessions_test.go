package mcptools_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/elicit"
	"chatd/internal/mcptools"
	"chatd/internal/processor/agent"
)

// TestHeldQuestionsCannotTakeEverySession: a 2025-era server's questions
// hold its sessions while they wait for answers. One principal's are
// bounded (the server is answered cancel beyond the bound, and the model
// told why), so another principal still gets a session; and a call that
// finds every session held fails within SessionWait with a tool error
// saying so, instead of waiting as long as the questions do.
func TestHeldQuestionsCannotTakeEverySession(t *testing.T) {
	got := newAnswers()
	cfg, _ := serverConfig(t, "srv", agent.TransportStreamableHTTP, gen2025, got)
	m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{MaxSessions: 2, MaxHeldPerPrincipal: 1, SessionWait: 100 * time.Millisecond})
	tool := mustTools(t, m.Server("srv"))["srv__ask"]
	// A call that waited as long as the questions hold would fail the test
	// here rather than hang it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ask := func(principal string) (agent.ToolResult, error) {
		return tool.Call(ctx, agent.ToolCall{ID: "c1", Name: "srv__ask", Arguments: json.RawMessage(`{}`), Principal: principal})
	}

	alice, err := ask("alice")
	require.NoError(t, err)
	require.NotNil(t, alice.Pause, "alice's question holds a session")

	_, err = ask("alice")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already wait for an answer")
	assert.JSONEq(t, `{"action":"cancel"}`, got.next(t), "the question beyond the bound is answered cancel")

	bob, err := ask("bob")
	require.NoError(t, err, "bob still gets a session")
	require.NotNil(t, bob.Pause)

	_, err = ask("carol")
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "mcp server srv: every session of the MCP server is busy")

	// An answer frees its session for the next call.
	res, err := tool.Call(ctx, agent.ToolCall{ID: "c1", Name: "srv__ask", Arguments: json.RawMessage(`{}`), Principal: "alice",
		Resume: &agent.ToolResume{Request: alice.Pause.Request, Result: elicit.Result{Action: elicit.Decline}, State: alice.Pause.State}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	got.next(t)
	carol, err := ask("carol")
	require.NoError(t, err)
	assert.NotNil(t, carol.Pause)
}
