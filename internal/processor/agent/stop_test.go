package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/processor/agent"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// stopWhenRunning runs a JSON turn, stops it once the thread shows it
// running and started reports it has begun, and returns the stopped turn.
func stopWhenRunning(tb testing.TB, c *chatd, thread, text string, started <-chan struct{}) turnResult {
	tb.Helper()
	answered := make(chan turnResult, 1)
	go func() { answered <- c.mustTurn(tb, thread, text) }()
	select {
	case <-started:
	case <-time.After(time.Minute):
		tb.Fatal("the turn did not start")
	}
	status, body := c.do(tb, http.MethodPost, "/v1/threads/"+thread+"/cancel", nil)
	require.Equal(tb, http.StatusAccepted, status, "%s", body)
	return <-answered
}

// TestStopAbortsTheModelCall: stopping an agent turn while the model
// streams closes the model's request at once, and the reply keeps what the
// model had written.
func TestStopAbortsTheModelCall(t *testing.T) {
	m := newFakeModel(t)
	hang := textReply("Hel")
	hang.chunks = hang.chunks[:2]
	hang.hang = true
	m.fallback = &hang
	closed := make(chan struct{})
	handler := m.Config.Handler
	m.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			close(closed)
		}
	})
	c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
	thread := c.mustThread(t)
	// Stopped once the model's text has reached the client, so the reply
	// has something to keep whatever the machine's pace.
	events := c.stream(t, context.Background(), thread, "hi")
	for {
		ev, err := events.next()
		require.NoError(t, err)
		if ev.name == "text.delta" && strings.Contains(string(ev.data), "Hel") {
			break
		}
	}
	status, body := c.do(t, http.MethodPost, "/v1/threads/"+thread+"/cancel", nil)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var res turnResult
	for _, ev := range events.all(t) {
		if ev.name == "turn.completed" {
			require.NoError(t, json.Unmarshal(ev.data, &res))
		}
	}
	assert.Equal(t, "stopped", res.Status)
	assert.Equal(t, "Hel", res.Message.Text)
	assert.Equal(t, true, res.Message.Meta["drupal.org/ai.stopped"])
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the model's request was not closed")
	}
}

// TestStopCancelsTheMCPToolCall: stopping an agent turn while an MCP tool
// runs cancels the call — a 2025 generation's server receives
// notifications/cancelled and its handler's context ends; a 2026-07-28
// server's request is closed — and records the call as cancelled.
func TestStopCancelsTheMCPToolCall(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			running, cancelled, released := make(chan struct{}), make(chan struct{}), make(chan struct{})
			stateless := version >= "2026-07-28"
			srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"},
				&mcp.ServerOptions{SupportedProtocolVersions: []string{version}})
			srv.AddTool(&mcp.Tool{Name: "wait", Description: "Works until cancelled", InputSchema: map[string]any{"type": "object"}},
				func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					close(running)
					select {
					case <-ctx.Done():
						close(cancelled)
						return nil, ctx.Err()
					case <-released: // a stateless server need not see its request close
						return &mcp.CallToolResult{}, nil
					}
				})
			notified := make(chan struct{})
			var once sync.Once
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{Stateless: stateless})
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`"method":"notifications/cancelled"`)) {
					once.Do(func() { close(notified) })
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				if stateless && bytes.Contains(body, []byte(`"method":"tools/call"`)) {
					go func() {
						<-r.Context().Done() // the call's request closed
						once.Do(func() { close(notified) })
					}()
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			t.Cleanup(func() { close(released) }) // before ts.Close, which waits for the handler
			server := agent.MCPServer{Name: "srv", Transport: agent.TransportStreamableHTTP, URL: ts.URL}

			m := newFakeModel(t, toolReply("Working on it.", call{"call_1", "srv__wait", `{}`}, call{"call_2", "srv__wait", `{}`}))
			st := store.NewMemory(testStoreOpts)
			t.Cleanup(func() { _ = st.Close() })
			a, _ := mcpAgent(t, m, store.NewLocalBus(), server)
			c := newChatd(t, st, a, turn.DefaultConfig)
			thread := c.mustThread(t)
			res := stopWhenRunning(t, c, thread, "wait", running)
			wait := map[string]chan struct{}{"notified of the cancel": notified, "cancelled": cancelled}
			if stateless {
				wait = map[string]chan struct{}{"closed": notified}
			}
			for what, ch := range wait {
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Fatalf("the server's tool call was not %s", what)
				}
			}
			assert.Equal(t, "stopped", res.Status)
			assert.Equal(t, "Working on it.", res.Message.Text)
			calls := res.toolCalls()
			require.Len(t, calls, 2)
			assert.Equal(t, "cancelled", calls[0]["status"])
			assert.Equal(t, "skipped", calls[1]["status"])
			assert.Len(t, m.sent(), 1, "no model call after the stop")
		})
	}
}
