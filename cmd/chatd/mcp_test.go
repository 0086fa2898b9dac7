package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWithMCPServer: an agent of the agents file calls a tool of an MCP
// server named in its mcp_servers, wired by run.
func TestRunWithMCPServer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hello", Description: "Greets", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi from mcp"}}}, nil
		})
	mcpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(mcpSrv.Close)

	// The model calls the tool, then answers once it has the result.
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = fmt.Sprintf("%q", finish)
		}
		return fmt.Sprintf("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
	}
	var sawTool atomic.Bool
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if bytes.Contains(body, []byte(`"role":"tool"`)) {
			fmt.Fprint(w, chunk(`{"role":"assistant","content":"Done."}`, "")+chunk(`{}`, "stop")+"data: [DONE]\n\n")
			return
		}
		sawTool.Store(bytes.Contains(body, []byte(`"name":"srv__hello"`)))
		fmt.Fprint(w, chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"srv__hello","arguments":"{}"}}]}`, "")+
			chunk(`{}`, "tool_calls")+"data: [DONE]\n\n")
	}))
	t.Cleanup(model.Close)

	file := filepath.Join(t.TempDir(), "agents.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`agents:
  - name: helper
    base_url: %s/v1
    model: m
    tools:
      mcp: [srv]
mcp_servers:
  - name: srv
    transport: streamable-http
    url: %s
`, model.URL, mcpSrv.URL)), 0o600))
	base, stop, _ := startRun(t, map[string]string{
		"CHATD_PROCESSORS": "helper", "CHATD_DEFAULT_PROCESSOR": "helper", "CHATD_AGENTS_FILE": file,
	})
	status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", `{}`, nil)
	require.Equal(t, http.StatusCreated, status)
	status, turn := mustDo(t, http.MethodPost, base+"/v1/threads/"+thread["id"].(string)+"/turns", `{"message":"greet"}`, nil)
	require.Equal(t, http.StatusOK, status, turn)
	msg := turn["message"].(map[string]any)
	assert.Equal(t, "Done.", msg["message"])
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "hi from mcp"}}, msg["content_blocks"])
	assert.True(t, sawTool.Load(), "the model was offered srv__hello")
	require.NoError(t, stop())
}
