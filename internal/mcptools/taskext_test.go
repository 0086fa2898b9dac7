package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/elicit"
	"chatd/internal/mcptools"
	"chatd/internal/processor/agent"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// extTaskServer is a 2026-07-28 streamable HTTP server with the tasks
// extension (io.modelcontextprotocol/tasks), written on raw JSON-RPC as
// go-sdk has no tasks. Each tool creates a task when the request declares
// the extension (and answers plainly otherwise) and its tasks/get goes:
//
//	job:     working "halfway", then completed "job done"
//	ask:     input_required (a form asking a name) until tasks/update
//	         answers it, listed once more after, then completed "Hello, <name>"
//	fail:    failed with a JSON-RPC error
//	slow:    working forever
//	garbage: an answer that is no task
type extTaskServer struct {
	mu       sync.Mutex
	requests []extRequest
	gets     map[string]int
	answer   map[string]string // task → the name tasks/update gave
	stale    map[string]bool   // task → listed its answered question once more
	tools    map[string]string // task → its tool
}

// extRequest is what the server saw of one request.
type extRequest struct {
	Method, McpMethod, McpName string
	Params                     map[string]json.RawMessage
}

func newExtTaskServer(tb testing.TB) (*extTaskServer, agent.MCPServer) {
	s := &extTaskServer{gets: map[string]int{}, answer: map[string]string{}, stale: map[string]bool{},
		tools: map[string]string{}}
	hs := httptest.NewServer(s)
	tb.Cleanup(hs.Close)
	return s, agent.MCPServer{Name: "ext", Transport: agent.TransportStreamableHTTP, URL: hs.URL}
}

func (s *extTaskServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage            `json:"id"`
		Method string                     `json:"method"`
		Params map[string]json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, extRequest{Method: req.Method, McpMethod: r.Header.Get("Mcp-Method"),
		McpName: r.Header.Get("Mcp-Name"), Params: req.Params})
	result, rpcErr := s.respond(req.Method, req.Params)
	s.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if rpcErr != nil {
		msg["error"] = rpcErr
	} else {
		msg["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(msg)
}

func taskState(id, status string, extra map[string]any) map[string]any {
	t := map[string]any{"resultType": "complete", "taskId": id, "status": status, "createdAt": "2026-12-01T10:00:00Z",
		"lastUpdatedAt": "2026-12-01T10:00:00Z", "ttlMs": 60000, "pollIntervalMs": 20}
	for k, v := range extra {
		t[k] = v
	}
	return t
}

func textResult(text string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": false}
}

var askName = map[string]any{"method": "elicitation/create", "params": map[string]any{"mode": "form",
	"message": "Please enter your name.", "requestedSchema": map[string]any{"type": "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}}}

// respond answers one request; the caller holds s.mu.
func (s *extTaskServer) respond(method string, params map[string]json.RawMessage) (any, any) {
	var taskID string
	_ = json.Unmarshal(params["taskId"], &taskID)
	tool := s.tools[taskID]
	switch method {
	case "server/discover":
		return map[string]any{"supportedVersions": []any{"2026-07-28"},
			"capabilities": map[string]any{"tools": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
			"_meta":        map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "ext", "version": "1"}}}, nil
	case "tools/list":
		var tools []any
		for _, name := range []string{"job", "ask", "fail", "slow", "garbage"} {
			tools = append(tools, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
		}
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		var p struct {
			Name string `json:"name"`
			Meta struct {
				Caps struct {
					Extensions map[string]any `json:"extensions"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(mustJSON(params), &p)
		if _, ok := p.Meta.Caps.Extensions["io.modelcontextprotocol/tasks"]; !ok {
			return textResult("no task: the client did not declare the extension"), nil
		}
		id := fmt.Sprintf("%s-%d", p.Name, len(s.tools)+1)
		s.tools[id] = p.Name
		t := taskState(id, "working", map[string]any{"statusMessage": "started"})
		t["resultType"] = "task"
		return t, nil
	case "tasks/get":
		s.gets[taskID]++
		n := s.gets[taskID]
		switch tool {
		case "job":
			if n == 1 {
				return taskState(taskID, "working", map[string]any{"statusMessage": "halfway"}), nil
			}
			return taskState(taskID, "completed", map[string]any{"result": textResult("job done")}), nil
		case "ask":
			name, answered := s.answer[taskID]
			if !answered || !s.stale[taskID] {
				s.stale[taskID] = answered
				return taskState(taskID, "input_required", map[string]any{"inputRequests": map[string]any{"name": askName}}), nil
			}
			return taskState(taskID, "completed", map[string]any{"result": textResult("Hello, " + name + "!")}), nil
		case "fail":
			return taskState(taskID, "failed", map[string]any{"statusMessage": "Tool execution failed",
				"error": map[string]any{"code": -32603, "message": "API rate limit exceeded"}}), nil
		case "garbage":
			return []int{1, 2}, nil
		}
		return taskState(taskID, "working", nil), nil
	case "tasks/update":
		var p struct {
			InputResponses map[string]struct {
				Action  string `json:"action"`
				Content struct {
					Name string `json:"name"`
				} `json:"content"`
			} `json:"inputResponses"`
		}
		_ = json.Unmarshal(mustJSON(params), &p)
		if r, ok := p.InputResponses["name"]; ok {
			s.answer[taskID] = r.Action + ":" + r.Content.Name
		}
		return map[string]any{"resultType": "complete"}, nil
	case "tasks/cancel":
		return map[string]any{"resultType": "complete"}, nil
	}
	return nil, map[string]any{"code": -32601, "message": "not found"}
}

func mustJSON(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

// sent returns the requests of method the server saw.
func (s *extTaskServer) sent(method string) []extRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []extRequest
	for _, r := range s.requests {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

func extCall(tb testing.TB, m *mcptools.Manager, name string, ctx context.Context, resume *agent.ToolResume) (agent.ToolResult, []agent.ToolStatus, error) {
	tb.Helper()
	tool := mustTools(tb, m.Server("ext"))["ext__"+name]
	require.NotNil(tb, tool)
	var seen []agent.ToolStatus
	res, err := tool.Call(ctx, agent.ToolCall{ID: "c1", Name: "ext__" + name, Arguments: json.RawMessage(`{}`), Resume: resume,
		Report: func(st agent.ToolStatus) { seen = append(seen, st) }})
	return res, seen, err
}

// TestExtTaskCompleted: chatd declares the tasks extension in the call's
// capabilities; the task the server answers with is polled at its
// pollIntervalMs, each status reported, and its inlined result is the
// call's. Every request about the task carries the 2026-07-28 _meta and
// the Mcp-Method and Mcp-Name headers.
func TestExtTaskCompleted(t *testing.T) {
	srv, cfg := newExtTaskServer(t)
	m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
	res, seen, err := extCall(t, m, "job", context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "job done", res.Content[0].Text())
	assert.Equal(t, []agent.ToolStatus{{Status: "working", StatusMessage: "started"}, {Status: "working", StatusMessage: "halfway"},
		{Status: "completed"}}, seen)
	gets := srv.sent("tasks/get")
	require.Len(t, gets, 2)
	for _, g := range gets {
		assert.Equal(t, "tasks/get", g.McpMethod)
		assert.Equal(t, "job-1", g.McpName)
		var meta map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(g.Params["_meta"], &meta))
		assert.JSONEq(t, `"2026-07-28"`, string(meta["io.modelcontextprotocol/protocolVersion"]))
		assert.Contains(t, string(meta["io.modelcontextprotocol/clientCapabilities"]), `"io.modelcontextprotocol/tasks":{}`)
		assert.Contains(t, string(meta["io.modelcontextprotocol/clientInfo"]), `"name":"chatd"`)
	}
	assert.Empty(t, srv.sent("tasks/cancel"))
}

// TestExtTaskFailed: a task that fails with a JSON-RPC error, or a tasks/get
// answer that is no task, fails the call with a clear error.
func TestExtTaskFailed(t *testing.T) {
	_, cfg := newExtTaskServer(t)
	m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
	_, _, err := extCall(t, m, "fail", context.Background(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the server's task failed")
	assert.Contains(t, err.Error(), "API rate limit exceeded")
	_, _, err = extCall(t, m, "garbage", context.Background(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tasks/get: the server's answer is not a task")
}

// TestExtTaskInput: a task that needs input pauses the call with its
// question; the answer goes back in tasks/update and the task ends with
// the result it makes of it. A question listed again after its answer is
// not asked twice.
func TestExtTaskInput(t *testing.T) {
	srv, cfg := newExtTaskServer(t)
	m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
	paused, _, err := extCall(t, m, "ask", context.Background(), nil)
	require.NoError(t, err)
	require.NotNil(t, paused.Pause, "the task's question pauses the call")
	assert.Equal(t, "Please enter your name.", paused.Pause.Request.Message)
	res, _, err := extCall(t, m, "ask", context.Background(), &agent.ToolResume{Request: paused.Pause.Request,
		Result: elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Luca"}}, State: paused.Pause.State})
	require.NoError(t, err)
	require.Nil(t, res.Pause, "the question is asked once")
	require.Len(t, res.Content, 1)
	assert.Equal(t, "Hello, accept:Luca!", res.Content[0].Text())
	updates := srv.sent("tasks/update")
	require.Len(t, updates, 1)
	assert.Equal(t, "ask-1", updates[0].McpName)
	assert.JSONEq(t, `{"name":{"action":"accept","content":{"name":"Luca"}}}`, string(updates[0].Params["inputResponses"]))
}

// TestExtTaskCancelled: a call whose context ends while its task works
// sends tasks/cancel for it.
func TestExtTaskCancelled(t *testing.T) {
	srv, cfg := newExtTaskServer(t)
	m := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(srv.sent("tasks/get")) < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, _, err := extCall(t, m, "slow", ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool { return len(srv.sent("tasks/cancel")) == 1 }, 10*time.Second, 10*time.Millisecond)
	c := srv.sent("tasks/cancel")[0]
	assert.Equal(t, "slow-1", c.McpName)
	assert.Contains(t, string(c.Params["_meta"]), `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`)
}

// TestExtTaskInputElsewhere: the answer to a task's question may reach
// another instance sharing the Redis; a question nobody answers in time
// cancels the task.
func TestExtTaskInputElsewhere(t *testing.T) {
	redisSrv := redistest.Start(t)
	relay := func() *store.RedisRelay {
		r, err := store.OpenRedis(redisSrv.URL(), store.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close() })
		return r.Relay()
	}
	srv, cfg := newExtTaskServer(t)
	holder := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{Relay: relay()})
	other := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{Relay: relay()})

	t.Run("answered on another instance", func(t *testing.T) {
		paused, _, err := extCall(t, holder, "ask", context.Background(), nil)
		require.NoError(t, err)
		require.NotNil(t, paused.Pause)
		res, _, err := extCall(t, other, "ask", context.Background(), &agent.ToolResume{Request: paused.Pause.Request,
			Result: elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Grace"}}, State: paused.Pause.State})
		require.NoError(t, err)
		require.Len(t, res.Content, 1)
		assert.Equal(t, "Hello, accept:Grace!", res.Content[0].Text())
	})
	t.Run("nobody answers", func(t *testing.T) {
		short := newTestManager(t, []agent.MCPServer{cfg}, mcptools.Options{Relay: relay(), HoldTTL: 50 * time.Millisecond})
		paused, _, err := extCall(t, short, "ask", context.Background(), nil)
		require.NoError(t, err)
		require.NotNil(t, paused.Pause)
		require.Eventually(t, func() bool { return len(srv.sent("tasks/cancel")) == 1 }, 10*time.Second, 10*time.Millisecond,
			"the task whose question expired is cancelled")
	})
}
