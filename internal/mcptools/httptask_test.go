package mcptools_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/mcptools"
	"chatd/internal/processor/agent"
)

// taskHTTPServer is a 2025-11-25 streamable HTTP server written on raw
// JSON-RPC (go-sdk has no tasks) with one task-only tool, answering
// tasks/get as bad says: "" a task working then completed, "http" an HTTP
// 500, "error" a JSON-RPC error, "garbage" a result that is no task,
// "notify" a status notification that the task completed. With
// creating set, tools/call says so on it and answers once it is closed.
type taskHTTPServer struct {
	bad      string
	creating chan chan struct{}
	mu       sync.Mutex
	methods  []string
	gets     int
}

func (s *taskHTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &req)
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	s.mu.Lock()
	s.methods = append(s.methods, req.Method)
	s.mu.Unlock()
	if req.Method != "initialize" && r.Header.Get("Mcp-Session-Id") != "s1" {
		http.Error(w, "no session", http.StatusBadRequest)
		return
	}
	var result any
	switch req.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "s1")
		result = map[string]any{"protocolVersion": "2025-11-25", "serverInfo": map[string]any{"name": "tasks", "version": "1"},
			"capabilities": map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"cancel": map[string]any{},
				"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}}
	case "tools/list":
		result = map[string]any{"tools": []any{map[string]any{"name": "job", "inputSchema": map[string]any{"type": "object"},
			"execution": map[string]any{"taskSupport": "required"}}}}
	case "tools/call":
		if s.creating != nil {
			release := make(chan struct{})
			s.creating <- release
			<-release
		}
		result = map[string]any{"task": map[string]any{"taskId": "t1", "status": "working", "pollInterval": 50}}
	case "tasks/get":
		s.mu.Lock()
		s.gets++
		gets := s.gets
		s.mu.Unlock()
		switch {
		case s.bad == "notify" && gets == 1:
			// The task is still working, and will not be asked again for
			// ten seconds; a notification in the same stream says it has
			// completed meanwhile.
			w.Header().Set("Content-Type", "text/event-stream")
			note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks/status",
				"params": map[string]any{"taskId": "t1", "status": "completed", "statusMessage": "notified"}})
			res, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"result": map[string]any{"taskId": "t1", "status": "working", "pollInterval": 10000}})
			_, _ = w.Write([]byte("event: message\ndata: " + string(note) + "\n\nevent: message\ndata: " + string(res) + "\n\n"))
			return
		case s.bad == "http":
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		case s.bad == "error":
			s.write(w, req.ID, nil, map[string]any{"code": -32602, "message": "no such task"})
			return
		case s.bad == "garbage":
			result = []int{1, 2}
		case gets == 1:
			result = map[string]any{"taskId": "t1", "status": "working", "statusMessage": "halfway"}
		default:
			result = map[string]any{"taskId": "t1", "status": "completed"}
		}
	case "tasks/result":
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "job done"}}}
	case "tasks/cancel":
		result = map[string]any{"taskId": "t1", "status": "cancelled"}
	default:
		s.write(w, req.ID, nil, map[string]any{"code": -32601, "message": "not found"})
		return
	}
	s.write(w, req.ID, result, nil)
}

func (s *taskHTTPServer) write(w http.ResponseWriter, id json.RawMessage, result, rpcErr any) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rpcErr != nil {
		msg["error"] = rpcErr
	} else {
		msg["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(msg)
}

func (s *taskHTTPServer) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.methods...)
}

// TestHTTPTaskJSONAnswers: over streamable HTTP a task-only tool runs as a
// task with plain JSON answers too; a server whose tasks/get answers badly
// fails the call with a clear error, never a panic, and the task is not
// left for the model to guess at.
func TestHTTPTaskJSONAnswers(t *testing.T) {
	for _, bad := range []string{"", "http", "error", "garbage"} {
		t.Run("bad="+bad, func(t *testing.T) {
			srv := &taskHTTPServer{bad: bad}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			m := newTestManager(t, []agent.MCPServer{{Name: "srv", Transport: agent.TransportStreamableHTTP, URL: hs.URL}}, mcptools.Options{})
			tool := mustTools(t, m.Server("srv"))["srv__job"]
			require.NotNil(t, tool, "a task-only tool is offered over HTTP")
			var seen []agent.ToolStatus
			res, err := tool.Call(context.Background(), agent.ToolCall{ID: "c1", Name: "srv__job", Arguments: json.RawMessage(`{}`),
				Report: func(st agent.ToolStatus) { seen = append(seen, st) }})
			switch bad {
			case "":
				require.NoError(t, err)
				require.Len(t, res.Content, 1)
				assert.Equal(t, "job done", res.Content[0].Text())
				assert.Equal(t, []agent.ToolStatus{{Status: "working"}, {Status: "working", StatusMessage: "halfway"},
					{Status: "completed"}}, seen)
				assert.Equal(t, []string{"server/discover", "initialize", "tools/list", "tools/call", "tasks/get", "tasks/get", "tasks/result"}, srv.sent())
			case "http":
				require.Error(t, err)
				assert.Contains(t, err.Error(), "tasks/get: the server answered HTTP 500")
			case "error":
				require.Error(t, err)
				assert.Contains(t, err.Error(), "no such task")
			case "garbage":
				require.Error(t, err)
				assert.Contains(t, err.Error(), "tasks/get: the server's answer is not a task")
			}
		})
	}
}

// TestHTTPTaskCancelled: a call whose context ends mid-task sends
// tasks/cancel on the session.
func TestHTTPTaskCancelled(t *testing.T) {
	srv := &taskHTTPServer{}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	m := newTestManager(t, []agent.MCPServer{{Name: "srv", Transport: agent.TransportStreamableHTTP, URL: hs.URL}}, mcptools.Options{})
	tool := mustTools(t, m.Server("srv"))["srv__job"]
	ctx, cancel := context.WithCancel(context.Background())
	_, err := tool.Call(ctx, agent.ToolCall{ID: "c1", Name: "srv__job", Arguments: json.RawMessage(`{}`),
		Report: func(agent.ToolStatus) { cancel() }})
	require.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool {
		for _, m := range srv.sent() {
			if m == "tasks/cancel" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "tasks/cancel is sent: %v", srv.sent())
}

// TestHTTPTaskCancelledWhileCreated: a stop that comes while the server is
// still creating the task ends the call at once, and the task is cancelled
// when its ID arrives.
func TestHTTPTaskCancelledWhileCreated(t *testing.T) {
	srv := &taskHTTPServer{creating: make(chan chan struct{})}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	m := newTestManager(t, []agent.MCPServer{{Name: "srv", Transport: agent.TransportStreamableHTTP, URL: hs.URL}}, mcptools.Options{})
	tool := mustTools(t, m.Server("srv"))["srv__job"]
	ctx, cancel := context.WithCancel(context.Background())
	var release chan struct{}
	go func() {
		release = <-srv.creating
		cancel()
	}()
	_, err := tool.Call(ctx, agent.ToolCall{ID: "c1", Name: "srv__job", Arguments: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, context.Canceled)
	assert.NotContains(t, srv.sent(), "tasks/cancel", "no task ID is known yet")
	close(release)
	require.Eventually(t, func() bool {
		sent := srv.sent()
		return len(sent) > 0 && sent[len(sent)-1] == "tasks/cancel"
	}, 10*time.Second, 10*time.Millisecond, "tasks/cancel is sent: %v", srv.sent())
}

// TestHTTPTaskStatusNotified: a 2025-11-25 server's
// notifications/tasks/status is the task's status as much as tasks/get's
// answer: a task it says has completed gets tasks/result at once, without
// waiting for the next poll.
func TestHTTPTaskStatusNotified(t *testing.T) {
	srv := &taskHTTPServer{bad: "notify"}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	m := newTestManager(t, []agent.MCPServer{{Name: "srv", Transport: agent.TransportStreamableHTTP, URL: hs.URL}}, mcptools.Options{})
	tool := mustTools(t, m.Server("srv"))["srv__job"]
	var seen []agent.ToolStatus
	res, err := tool.Call(context.Background(), agent.ToolCall{ID: "c1", Name: "srv__job", Arguments: json.RawMessage(`{}`),
		Report: func(st agent.ToolStatus) { seen = append(seen, st) }})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "job done", res.Content[0].Text())
	assert.Equal(t, []agent.ToolStatus{{Status: "working"}, {Status: "completed", StatusMessage: "notified"}}, seen)
	assert.Equal(t, []string{"server/discover", "initialize", "tools/list", "tools/call", "tasks/get", "tasks/result"}, srv.sent())
}
