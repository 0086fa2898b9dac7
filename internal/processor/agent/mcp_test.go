package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/mcptools"
	"chatd/internal/processor/agent"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// These tests run agent turns through chatd's API that call MCP servers'
// tools: the reference server (@modelcontextprotocol/server-everything, run
// with node over stdio) and go-sdk servers. The model is the scripted fake.

// everythingServer is the reference server of the agents file, installed
// from its lockfile by scripts/ensure-node-deps.sh (make test runs it; this
// runs it when the package is missing). It is never skipped under CI=true.
func everythingServer(tb testing.TB) agent.MCPServer {
	tb.Helper()
	root, err := filepath.Abs("../../..")
	require.NoError(tb, err)
	dir := filepath.Join(root, "internal/mcptools/testdata/server-everything")
	entry := filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("node is needed for the MCP reference server: %v", err)
		}
		tb.Skipf("node is not installed: %v", err)
	}
	if _, err := os.Stat(entry); err != nil {
		cmd := exec.Command("bash", filepath.Join(root, "scripts/ensure-node-deps.sh"))
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(tb, err, "installing the MCP reference server: %s", out)
	}
	return agent.MCPServer{Name: "everything", Transport: agent.TransportStdio, Command: node, Args: []string{entry, "stdio"}}
}

// mcpAgent is an agent on the fake model with the tools of the given
// servers, each from a manager of its own instance.
func mcpAgent(tb testing.TB, m *fakeModel, relay mcptools.Relay, servers ...agent.MCPServer) (*agent.Agent, *mcptools.Manager) {
	tb.Helper()
	mgr := mcptools.New(servers, mcptools.Options{Relay: relay})
	tb.Cleanup(func() { _ = mgr.Close() })
	cfg := agentConfig(m)
	for _, s := range servers {
		cfg.Tools = append(cfg.Tools, mgr.Server(s.Name))
	}
	return mustAgent(tb, cfg), mgr
}

// waitForTool waits until a server lists a tool (the reference server adds
// some after the handshake and announces them with list_changed).
func waitForTool(tb testing.TB, src agent.ToolSource, name string) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		list, err := src.Tools(context.Background())
		require.NoError(tb, err)
		for _, t := range list {
			if t.Definition().Name == name {
				return true
			}
		}
		return false
	}, time.Minute, 50*time.Millisecond, "the server lists %s", name)
}

func TestMCPReferenceServer(t *testing.T) {
	everything := everythingServer(t)
	redisSrv := redistest.Start(t)
	m := newFakeModel(t)
	stA, stB := openRedisStore(t, redisSrv), openRedisStore(t, redisSrv)
	agentA, mgrA := mcpAgent(t, m, stA.Relay(), everything)
	agentB, _ := mcpAgent(t, m, stB.Relay(), everything)
	first := newChatd(t, stA, agentA, turn.DefaultConfig)
	second := newChatd(t, stB, agentB, turn.DefaultConfig)
	waitForTool(t, mgrA.Server("everything"), "everything__trigger-elicitation-request")
	thread := first.mustThread(t)

	t.Run("content blocks", func(t *testing.T) {
		m.add(toolReply("", call{"call_1", "everything__get-annotated-message", `{"messageType":"error","includeImage":true}`}),
			toolReply("", call{"call_2", "everything__get-structured-content", `{"location":"Chicago"}`}),
			textReply("Here you are."))
		r := first.mustTurn(t, thread, "show me")
		require.Equal(t, "completed", r.Status)
		require.Len(t, r.Message.ContentBlocks, 3)
		assert.JSONEq(t, `{"type":"text","text":"Error: Operation failed","annotations":{"priority":1,"audience":["user","assistant"]}}`,
			string(r.Message.ContentBlocks[0]), "the server's block, annotations kept")
		var img map[string]any
		require.NoError(t, json.Unmarshal(r.Message.ContentBlocks[1], &img))
		assert.Equal(t, "image", img["type"])
		assert.Equal(t, "image/png", img["mimeType"])
		assert.Equal(t, map[string]any{"priority": 0.5, "audience": []any{"user"}}, img["annotations"])
		assert.JSONEq(t, `{"type":"text","text":"{\"temperature\":36,\"conditions\":\"Light rain / drizzle\",\"humidity\":82}"}`,
			string(r.Message.ContentBlocks[2]))
		assert.Equal(t, map[string]any{"temperature": float64(36), "conditions": "Light rain / drizzle", "humidity": float64(82)},
			r.Message.Meta["drupal.org/ai.structured_content"])
		msgs := m.sent()[1].Messages
		assert.Contains(t, msgs[len(msgs)-1]["content"], "Error: Operation failed", "the model reads the blocks as text")
	})

	t.Run("elicitation answered on another instance", func(t *testing.T) {
		m.add(toolReply("", call{"call_3", "everything__trigger-elicitation-request", `{}`}),
			textReply("Thanks, Ada."))
		paused := first.mustTurn(t, thread, "ask me things")
		require.Equal(t, "input_required", paused.Status)
		require.NotNil(t, paused.Elicitation)
		assert.Equal(t, "Please provide inputs for the following fields:", paused.Elicitation.Message)
		assert.Contains(t, paused.Elicitation.RequestedSchema["properties"], "titledMultipleSelectEnum")

		// The call is held open on the first instance; the second receives
		// the answer and reaches it through Redis.
		done := second.mustAnswer(t, thread, paused.elicitationID(),
			map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "check": true}})
		require.Equal(t, "completed", done.Status)
		assert.Equal(t, "Thanks, Ada.", done.Message.Text)
		require.NotEmpty(t, done.Message.ContentBlocks)
		var first map[string]any
		require.NoError(t, json.Unmarshal(done.Message.ContentBlocks[0], &first))
		assert.Contains(t, first["text"], "User provided the requested information")
		var all string
		for _, b := range done.Message.ContentBlocks {
			all += string(b)
		}
		assert.Contains(t, all, `- Name: Ada`)
		assert.Equal(t, "done", done.toolCalls()[0]["status"])
	})
}

// newGoMCPServer serves, over streamable HTTP, a go-sdk server speaking
// version with a destructive tool and a tool that asks the user's name.
func newGoMCPServer(tb testing.TB, version string) agent.MCPServer {
	tb.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: []string{version}})
	yes := true
	object := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "delete_all", Description: "Deletes everything", InputSchema: object,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "ask", Description: "Asks the user's name", InputSchema: object},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["q"].(*mcp.ElicitResult); ok {
				name, _ := r.Content["name"].(string)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Action + ": " + name}}}, nil
			}
			return &mcp.CallToolResult{RequestState: "s1", InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{
				Message: "Your name?", RequestedSchema: map[string]any{"type": "object",
					"properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: version >= "2026-07-28"})
	ts := httptest.NewServer(h)
	tb.Cleanup(ts.Close)
	return agent.MCPServer{Name: "srv", Transport: agent.TransportStreamableHTTP, URL: ts.URL}
}

// TestMCPGoServers: each protocol generation's question answered on another
// instance, and a destructive tool confirmed first.
func TestMCPGoServers(t *testing.T) {
	redisSrv := redistest.Start(t)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			server := newGoMCPServer(t, version)
			m := newFakeModel(t)
			stA, stB := openRedisStore(t, redisSrv), openRedisStore(t, redisSrv)
			agentA, _ := mcpAgent(t, m, stA.Relay(), server)
			agentB, _ := mcpAgent(t, m, stB.Relay(), server)
			first := newChatd(t, stA, agentA, turn.DefaultConfig)
			second := newChatd(t, stB, agentB, turn.DefaultConfig)
			thread := first.mustThread(t)

			m.add(toolReply("", call{"call_1", "srv__ask", `{}`}), textReply("Hello, Ada."))
			paused := first.mustTurn(t, thread, "greet me")
			require.Equal(t, "input_required", paused.Status)
			assert.Equal(t, "Your name?", paused.Elicitation.Message)
			done := second.mustAnswer(t, thread, paused.elicitationID(),
				map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}})
			require.Equal(t, "completed", done.Status)
			require.Len(t, done.Message.ContentBlocks, 1)
			assert.JSONEq(t, `{"type":"text","text":"accept: Ada"}`, string(done.Message.ContentBlocks[0]))
			msgs := m.sent()[1].Messages
			assert.Equal(t, "accept: Ada", msgs[len(msgs)-1]["content"], "the model gets the tool's result")

			m.add(toolReply("", call{"call_2", "srv__delete_all", `{}`}), textReply("All gone."))
			confirm := first.mustTurn(t, thread, "delete everything")
			require.Equal(t, "input_required", confirm.Status, "destructiveHint: the user confirms first")
			assert.Contains(t, confirm.Elicitation.Message, "srv__delete_all")
			done = second.mustAnswer(t, thread, confirm.elicitationID(), map[string]any{"action": "accept"})
			assert.Equal(t, "All gone.", done.Message.Text)
			assert.JSONEq(t, `{"type":"text","text":"deleted"}`, string(done.Message.ContentBlocks[0]))
		})
	}
}

// TestMCPHolderGone: the instance holding a 2025-era call stops before the
// answer comes; the instance that receives it tells the model the tool did
// not complete, and the turn goes on.
func TestMCPHolderGone(t *testing.T) {
	redisSrv := redistest.Start(t)
	server := newGoMCPServer(t, "2025-06-18")
	m := newFakeModel(t)
	stA, stB := openRedisStore(t, redisSrv), openRedisStore(t, redisSrv)
	agentA, mgrA := mcpAgent(t, m, stA.Relay(), server)
	agentB, _ := mcpAgent(t, m, stB.Relay(), server)
	first := newChatd(t, stA, agentA, turn.DefaultConfig)
	second := newChatd(t, stB, agentB, turn.DefaultConfig)
	thread := first.mustThread(t)

	m.add(toolReply("", call{"call_1", "srv__ask", `{}`}), textReply("Sorry, that did not work."))
	paused := first.mustTurn(t, thread, "greet me")
	require.Equal(t, "input_required", paused.Status)
	require.NoError(t, mgrA.Close(), "the first instance stops: its held call is answered cancel")

	done := second.mustAnswer(t, thread, paused.elicitationID(),
		map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}})
	require.Equal(t, "completed", done.Status)
	assert.Equal(t, "Sorry, that did not work.", done.Message.Text)
	assert.Equal(t, "failed", done.toolCalls()[0]["status"])
	msgs := m.sent()[1].Messages
	assert.Equal(t, "error: the tool did not complete: the chatd instance that was running it is gone",
		msgs[len(msgs)-1]["content"], "the model is told")
}

// openRedisStore opens a store client of its own on srv, as one instance
// of chatd would, closed with the test.
func openRedisStore(t *testing.T, srv *redistest.Server) *store.Redis {
	t.Helper()
	st, err := store.OpenRedis(srv.URL(), testStoreOpts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}
