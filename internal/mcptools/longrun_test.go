package mcptools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/elicit"
	"chatd/internal/mcptools"
	"chatd/internal/processor/agent"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// TestProgress: a call's notifications/progress reach ToolCall.Report as
// they arrive, with the numbers the server wrote; a notification for a
// token that is no call of chatd's is ignored.
func TestProgress(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			var got *answers
			cfg, _ := serverConfig(t, "srv", tc.transport, tc.version, nil)
			if tc.transport == agent.TransportStreamableHTTP {
				// In process: the tool waits for each step to be reported
				// before it sends the next, so the steps cannot have been
				// batched at the end.
				got = newAnswers()
				cfg, _ = serverConfig(t, "srv", tc.transport, tc.version, got)
			}
			m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			var seen []agent.ToolStatus
			report := func(st agent.ToolStatus) {
				seen = append(seen, st)
				if got != nil {
					got.steps <- struct{}{}
				}
			}
			res, err := mustTools(t, m.Server("srv"))["srv__progress"].Call(context.Background(),
				agent.ToolCall{ID: "c1", Name: "srv__progress", Arguments: json.RawMessage(`{}`), Report: report})
			require.NoError(t, err)
			require.Len(t, res.Content, 1)
			assert.Equal(t, "all done", res.Content[0].Text())
			steps := []agent.ToolStatus{
				{Progress: "0.5", Message: "step 1"},
				{Progress: "1", Total: "1.5", Message: "step 2"},
				{Progress: "1.5", Total: "1.5", Message: "step 3"},
			}
			if got != nil {
				assert.Equal(t, steps, seen, "every step, in order")
				return
			}
			// Over stdio the server does not wait: a step reported while the
			// previous one was still being shown is shown as the latest.
			require.NotEmpty(t, seen)
			for _, st := range seen {
				assert.Contains(t, steps, st)
			}
		})
	}
}

// urlTransports are the combinations URL-mode questions run over: the
// generations that have them.
var urlTransports = []struct{ name, transport, version string }{
	{"http-2026", agent.TransportStreamableHTTP, gen2026},
	{"http-2025-11-25", agent.TransportStreamableHTTP, gen20251125},
	{"stdio-2026", agent.TransportStdio, gen2026},
	{"stdio-2025-11-25", agent.TransportStdio, gen20251125},
}

// TestURLQuestion: a server's URL-mode question pauses the call with it;
// the user's accept goes back to the server.
func TestURLQuestion(t *testing.T) {
	for _, tc := range urlTransports {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := serverConfig(t, "srv", tc.transport, tc.version, nil)
			m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			tool := mustTools(t, m.Server("srv"))["srv__url_ask"]
			paused := mustCall(t, tool, nil)
			req := pausedRequest(t, paused)
			assert.True(t, req.IsURL())
			assert.Equal(t, "Sign in", req.Message)
			assert.Equal(t, "https://example.com/login", req.URL)
			assert.Equal(t, "e1", req.ElicitationID)
			res := mustCall(t, tool, &agent.ToolResume{Request: req, Result: elicit.Result{Action: elicit.Accept}, State: paused.Pause.State})
			require.Nil(t, res.Pause)
			require.Len(t, res.Content, 1)
			assert.Contains(t, res.Content[0].Text(), `"action":"accept"`)
		})
	}
}

// TestURLQuestionDeclined: a URL with credentials, or a script, is declined
// back to the server; nothing is asked.
func TestURLQuestionDeclined(t *testing.T) {
	for _, tc := range urlTransports {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := serverConfig(t, "srv", tc.transport, tc.version, nil)
			m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			tools := mustTools(t, m.Server("srv"))
			for _, name := range []string{"srv__password_url_ask", "srv__script_url_ask"} {
				res := mustCall(t, tools[name], nil)
				require.Nil(t, res.Pause, "%s: nothing is asked", name)
				require.Len(t, res.Content, 1)
				assert.Contains(t, res.Content[0].Text(), `"action":"decline"`, name)
			}
		})
	}
}

// TestURLQuestionHeldAnsweredElsewhere: a 2025-11-25 call's URL-mode
// question, held on one instance, answered on another through Redis.
func TestURLQuestionHeldAnsweredElsewhere(t *testing.T) {
	redisSrv := redistest.Start(t)
	relay := func() *store.RedisRelay {
		r, err := store.OpenRedis(redisSrv.URL(), store.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close() })
		return r.Relay()
	}
	got := newAnswers()
	cfg, _ := serverConfig(t, "srv", agent.TransportStreamableHTTP, gen20251125, got)
	holder := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{Relay: relay()})
	other := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{Relay: relay()})
	paused := mustCall(t, mustTools(t, holder.Server("srv"))["srv__url_ask"], nil)
	var st map[string]any
	require.NoError(t, json.Unmarshal(paused.Pause.State, &st))
	assert.Equal(t, "held", st["kind"])
	req := pausedRequest(t, paused)
	require.True(t, req.IsURL())
	res := mustCall(t, mustTools(t, other.Server("srv"))["srv__url_ask"],
		&agent.ToolResume{Request: req, Result: elicit.Result{Action: elicit.Accept}, State: paused.Pause.State})
	require.Len(t, res.Content, 1)
	assert.Contains(t, res.Content[0].Text(), `"action":"accept"`)
	assert.JSONEq(t, `{"action":"accept"}`, got.next(t))
}

// TestURLRequired: a call answered -32042 pauses on each page the error
// names, then is retried with the same arguments.
func TestURLRequired(t *testing.T) {
	for _, tc := range urlTransports {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := serverConfig(t, "srv", tc.transport, tc.version, nil)
			m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
			tool := mustTools(t, m.Server("srv"))["srv__url_required"]
			call := func(args string, resume *agent.ToolResume) (agent.ToolResult, error) {
				return tool.Call(context.Background(), agent.ToolCall{ID: "c1", Name: "srv__url_required", Arguments: json.RawMessage(args), Resume: resume})
			}
			first, err := call(`{"account":7}`, nil)
			require.NoError(t, err)
			req := pausedRequest(t, first)
			assert.Equal(t, "https://example.com/auth", req.URL)
			assert.Equal(t, "pre-1", req.ElicitationID)
			second, err := call(`{"account":7}`, &agent.ToolResume{Request: req, Result: elicit.Result{Action: elicit.Accept}, State: first.Pause.State})
			require.NoError(t, err)
			req = pausedRequest(t, second)
			assert.Equal(t, "http://127.0.0.1:9/terms", req.URL)
			done, err := call(`{"account":7}`, &agent.ToolResume{Request: req, Result: elicit.Result{Action: elicit.Accept}, State: second.Pause.State})
			require.NoError(t, err)
			require.Nil(t, done.Pause)
			require.Len(t, done.Content, 1)
			assert.Equal(t, `signed in with {"account":7}`, done.Content[0].Text())

			// Declined: the call is not retried; the model hears why.
			first, err = call(`{"account":8}`, nil)
			require.NoError(t, err)
			_, err = call(`{"account":8}`, &agent.ToolResume{Request: pausedRequest(t, first), Result: elicit.Result{Action: elicit.Decline}, State: first.Pause.State})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "the user did not complete the page the tool needs (decline)")
		})
	}
}

// TestURLCompleteEndsTheWait: notifications/elicitation/complete answers the
// held question for the user; their later answer finds the call's result.
func TestURLCompleteEndsTheWait(t *testing.T) {
	got := newAnswers()
	cfg, _ := serverConfig(t, "srv", agent.TransportStreamableHTTP, gen20251125, got)
	m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
	tool := mustTools(t, m.Server("srv"))["srv__watched_url_ask"]
	paused := mustCall(t, tool, nil)
	req := pausedRequest(t, paused)
	assert.Equal(t, "watched", req.ElicitationID)
	close(got.completeNow)
	assert.JSONEq(t, `{"action":"accept"}`, got.next(t), "the server is answered when it says the page is done")
	res := mustCall(t, tool, &agent.ToolResume{Request: req, Result: elicit.Result{Action: elicit.Accept}, State: paused.Pause.State})
	require.Len(t, res.Content, 1)
	assert.Contains(t, res.Content[0].Text(), `payment: {"action":"accept"}`)
}
