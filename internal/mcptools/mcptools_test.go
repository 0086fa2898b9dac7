package mcptools_test

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/elicit"
	"chatd/internal/mcptools"
	"chatd/internal/processor/agent"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

func newTestManager(tb testing.TB, servers []agent.MCPServer, opts mcptools.Options) *mcptools.Manager {
	tb.Helper()
	m := mcptools.New(servers, opts)
	tb.Cleanup(func() { _ = m.Close() })
	return m
}

func mustTools(tb testing.TB, src agent.ToolSource) map[string]agent.Tool {
	tb.Helper()
	list, err := src.Tools(context.Background())
	require.NoError(tb, err)
	out := map[string]agent.Tool{}
	for _, t := range list {
		out[t.Definition().Name] = t
	}
	return out
}

func names(tools map[string]agent.Tool) []string {
	var out []string
	for n := range tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func mustCall(tb testing.TB, t agent.Tool, resume *agent.ToolResume) agent.ToolResult {
	tb.Helper()
	res, err := t.Call(context.Background(), agent.ToolCall{ID: "c1", Name: t.Definition().Name, Arguments: json.RawMessage(`{}`), Resume: resume})
	require.NoError(tb, err)
	return res
}

// transports are the combinations every test of tools runs over.
var transports = []struct{ name, transport, version string }{
	{"http-2026", agent.TransportStreamableHTTP, gen2026},
	{"http-2025", agent.TransportStreamableHTTP, gen2025},
	{"stdio-2026", agent.TransportStdio, gen2026},
	{"stdio-2025", agent.TransportStdio, gen2025},
}

func TestToolsAndBlocks(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := serverConfig(t, "srv", tc.transport, tc.version, nil)
			m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			tools := mustTools(t, m.Server("srv"))
			assert.Equal(t, []string{"srv__ask", "srv__bad_ask", "srv__content", "srv__delete_all", "srv__environment", "srv__fail", "srv__password_url_ask", "srv__peek", "srv__progress", "srv__script_url_ask", "srv__url_ask", "srv__url_required", "srv__watched_url_ask"}, names(tools))
			assert.True(t, tools["srv__delete_all"].Definition().Destructive, "destructiveHint: true")
			assert.False(t, tools["srv__peek"].Definition().Destructive, "readOnlyHint wins over destructiveHint")
			assert.False(t, tools["srv__content"].Definition().Destructive, "no annotations: not confirmed")
			assert.JSONEq(t, `{"type":"object"}`, string(tools["srv__content"].Definition().Parameters))

			res := mustCall(t, tools["srv__content"], nil)
			got, err := json.Marshal(res.Content)
			require.NoError(t, err)
			assert.JSONEq(t, contentJSON, string(got), "blocks exactly as the server sent them")
			assert.JSONEq(t, structuredJSON, string(res.StructuredContent))
			assert.False(t, res.IsError)

			res = mustCall(t, tools["srv__fail"], nil)
			assert.True(t, res.IsError)
			require.Len(t, res.Content, 1)
			assert.Equal(t, "disk full", res.Content[0].Text())
		})
	}
}

func TestAllow(t *testing.T) {
	cfg, _ := serverConfig(t, "srv", agent.TransportStreamableHTTP, gen2026, nil)
	cfg.Allow = []string{"c*", "peek"}
	m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
	assert.Equal(t, []string{"srv__content", "srv__peek"}, names(mustTools(t, m.Server("srv"))))
}

func TestListChanged(t *testing.T) {
	for _, version := range []string{gen2026, gen2025} {
		t.Run(version, func(t *testing.T) {
			cfg, srv := serverConfig(t, "srv", agent.TransportStreamableHTTP, version, nil)
			m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			require.NotContains(t, mustTools(t, m.Server("srv")), "srv__later")
			srv.AddTool(&mcp.Tool{Name: "later", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
			require.Eventually(t, func() bool {
				_, ok := mustTools(t, m.Server("srv"))["srv__later"]
				return ok
			}, 30*time.Second, 20*time.Millisecond, "the list is fetched again after list_changed")
		})
	}
}

// pausedRequest checks a paused result and returns its request.
func pausedRequest(tb testing.TB, res agent.ToolResult) *elicit.Request {
	tb.Helper()
	require.NotNil(tb, res.Pause, "the call pauses to ask the user")
	require.NotNil(tb, res.Pause.Request)
	return res.Pause.Request
}

func answerName(name string) elicit.Result {
	return elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": name}}
}

// TestElicitation2026 retries the call with the answer on another instance:
// nothing of the call is held anywhere.
func TestElicitation2026(t *testing.T) {
	for _, transport := range []string{agent.TransportStreamableHTTP, agent.TransportStdio} {
		t.Run(transport, func(t *testing.T) {
			cfg, _ := serverConfig(t, "srv", transport, gen2026, nil)
			first := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			res := mustCall(t, mustTools(t, first.Server("srv"))["srv__ask"], nil)
			req := pausedRequest(t, res)
			assert.Equal(t, "What is your name?", req.Message)
			var st map[string]any
			require.NoError(t, json.Unmarshal(res.Pause.State, &st))
			assert.Equal(t, "input_required", st["kind"])
			assert.Equal(t, "state-1", st["request_state"])
			assert.Equal(t, "q", st["asking"])

			// A second instance, as after a restart: no relay, no shared memory.
			second := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			res = mustCall(t, mustTools(t, second.Server("srv"))["srv__ask"],
				&agent.ToolResume{Request: req, Result: answerName("Ada"), State: res.Pause.State})
			require.Nil(t, res.Pause)
			require.Len(t, res.Content, 1)
			assert.JSONEq(t, `{"action":"accept","content":{"name":"Ada"}}`, res.Content[0].Text()[len("answer: "):])
		})
	}
}

// TestElicitationDeclined: a question outside chatd's form restriction is
// declined back to the server without asking the user.
func TestElicitationDeclined(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := serverConfig(t, "srv", tc.transport, tc.version, nil)
			m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			tools := mustTools(t, m.Server("srv"))
			res := mustCall(t, tools["srv__bad_ask"], nil)
			require.Nil(t, res.Pause, "nothing is asked")
			require.Len(t, res.Content, 1)
			assert.Contains(t, res.Content[0].Text(), `"action":"decline"`)

			// URL mode: a URL chatd does not show is declined as well.
			res = mustCall(t, tools["srv__script_url_ask"], nil)
			require.Nil(t, res.Pause, "nothing is asked")
			assert.Contains(t, res.Content[0].Text(), `"action":"decline"`)
		})
	}
}

// TestElicitationHeld: a 2025-era call stays open on the instance that made
// it; the answer reaches it from any instance sharing the Redis.
func TestElicitationHeld(t *testing.T) {
	redisSrv := redistest.Start(t)
	relay := func() *store.RedisRelay {
		r, err := store.OpenRedis(redisSrv.URL(), store.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close() })
		return r.Relay()
	}
	got := newAnswers()
	cfg, _ := serverConfig(t, "srv", agent.TransportStreamableHTTP, gen2025, got)
	holder := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{Relay: relay()})
	other := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{Relay: relay()})
	ask := func(m *mcptools.Manager) agent.ToolResult {
		return mustCall(t, mustTools(t, m.Server("srv"))["srv__ask"], nil)
	}
	resume := func(m *mcptools.Manager, paused agent.ToolResult, r elicit.Result) (agent.ToolResult, error) {
		return mustTools(t, m.Server("srv"))["srv__ask"].Call(context.Background(), agent.ToolCall{
			ID: "c1", Name: "srv__ask", Arguments: json.RawMessage(`{}`),
			Resume: &agent.ToolResume{Request: paused.Pause.Request, Result: r, State: paused.Pause.State}})
	}

	t.Run("same instance", func(t *testing.T) {
		paused := ask(holder)
		assert.Equal(t, "What is your name?", pausedRequest(t, paused).Message)
		res, err := resume(holder, paused, answerName("Ada"))
		require.NoError(t, err)
		require.Len(t, res.Content, 1)
		assert.Contains(t, res.Content[0].Text(), `"name":"Ada"`)
		assert.Contains(t, got.next(t), `"name":"Ada"`)
	})
	t.Run("another instance", func(t *testing.T) {
		paused := ask(holder)
		res, err := resume(other, paused, answerName("Grace"))
		require.NoError(t, err)
		require.Len(t, res.Content, 1)
		assert.Contains(t, res.Content[0].Text(), `"name":"Grace"`)
		assert.Contains(t, got.next(t), `"name":"Grace"`)
	})
	t.Run("answered twice", func(t *testing.T) {
		paused := ask(holder)
		_, err := resume(other, paused, answerName("Once"))
		require.NoError(t, err)
		got.next(t)
		_, err = resume(other, paused, answerName("Twice"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the tool did not complete")
	})
	t.Run("expired", func(t *testing.T) {
		short := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{Relay: relay(), HoldTTL: 50 * time.Millisecond})
		paused := ask(short)
		assert.JSONEq(t, `{"action":"cancel"}`, got.next(t), "the server is answered cancel when the question expires")
		_, err := resume(other, paused, answerName("Late"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the tool did not complete")
	})
	t.Run("holder gone", func(t *testing.T) {
		gone := mcptools.New([]agent.MCPServer{cfg}, mcptools.Options{Relay: relay()})
		paused := ask(gone)
		require.NoError(t, gone.Close())
		assert.JSONEq(t, `{"action":"cancel"}`, got.next(t), "a holder shutting down answers cancel")
		_, err := resume(other, paused, answerName("Nobody"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the tool did not complete: the chatd instance that was running it is gone")
	})
}

// TestElicitationHeldInProcess: without Redis, one instance holds and
// answers through its in-process bus, over stdio too.
func TestElicitationHeldInProcess(t *testing.T) {
	cfg, _ := serverConfig(t, "srv", agent.TransportStdio, gen2025, nil)
	m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
	tool := mustTools(t, m.Server("srv"))["srv__ask"]
	paused := mustCall(t, tool, nil)
	var st map[string]any
	require.NoError(t, json.Unmarshal(paused.Pause.State, &st))
	assert.Equal(t, "held", st["kind"])
	res := mustCall(t, tool, &agent.ToolResume{Request: paused.Pause.Request, Result: elicit.Result{Action: elicit.Decline}, State: paused.Pause.State})
	require.Len(t, res.Content, 1)
	assert.Contains(t, res.Content[0].Text(), `"action":"decline"`)
}

// TestStdioServersGetAMinimalEnvironment: a stdio server (a real child
// process) sees the base environment and its own env, never chatd's keys
// or settings, unless its entry says inherit_env.
func TestStdioServersGetAMinimalEnvironment(t *testing.T) {
	t.Setenv("CHATD_API_KEYS", "alice:tenant-secret")
	t.Setenv("CHATD_REDIS_URL", "redis://:redis-secret@127.0.0.1:6379")
	t.Setenv("SOME_OTHER_KEY", "other-secret")
	for _, inherit := range []bool{false, true} {
		cfg, _ := serverConfig(t, "srv", agent.TransportStdio, gen2025, nil)
		cfg.Env["SERVER_OWN"] = "its-own"
		cfg.InheritEnv = inherit
		m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
		res := mustCall(t, mustTools(t, m.Server("srv"))["srv__environment"], nil)
		require.Len(t, res.Content, 1)
		env := res.Content[0].Text()
		assert.Contains(t, env, "SERVER_OWN=its-own")
		assert.Contains(t, env, "PATH="+os.Getenv("PATH"))
		for _, secret := range []string{"tenant-secret", "redis-secret", "other-secret"} {
			assert.Equal(t, inherit, strings.Contains(env, secret), "inherit_env %t: %s", inherit, secret)
		}
	}
}
