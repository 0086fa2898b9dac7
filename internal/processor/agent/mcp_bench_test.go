package agent_test

import (
	"bytes"
	"chatd/internal/streamtest"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/mcptools"
	"chatd/internal/processor"
	"chatd/internal/processor/agent"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// toolModel is an instant in-process model that calls tool on a fresh
// question and answers in text once it has the tool's result.
func toolModel(tool string) *http.Client {
	stream := func(r reply) []byte {
		var buf bytes.Buffer
		for _, c := range r.chunks {
			fmt.Fprintf(&buf, "data: %s\n\n", c)
		}
		buf.WriteString("data: [DONE]\n\n")
		return buf.Bytes()
	}
	callIt := stream(toolReply("", call{"call_1", tool, `{"text":"hi"}`}))
	answer := stream(textReply("The tool said hi."))
	return &http.Client{Transport: streamtest.RoundTripper(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		_ = r.Body.Close()
		out := callIt
		if bytes.Contains(body, []byte(`"role":"tool"`)) {
			out = answer
		}
		return &http.Response{
			StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(out)), Request: r,
		}, nil
	})}
}

// goEcho is the Go tool of the comparison: the same result as the MCP one.
type goEcho struct{}

func (goEcho) Definition() agent.ToolDefinition {
	return agent.ToolDefinition{Name: "go_echo", Description: "Echoes", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (goEcho) Call(_ context.Context, c agent.ToolCall) (agent.ToolResult, error) {
	return agent.ToolResult{Content: []blocks.ContentBlock{blocks.Text("hi")}}, nil
}

// BenchmarkMCPToolTurn compares an agent turn that calls one MCP tool over
// streamable HTTP (a go-sdk server on loopback in this process) with the
// same turn calling a Go tool: two model calls each (an instant in-process
// model), one tool call, the same content block. Turns alternate so load
// from elsewhere falls on both; mcp/go is the ratio of their mean times.
func BenchmarkMCPToolTurn(b *testing.B) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		b.Run("protocol="+version, func(b *testing.B) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"},
				&mcp.ServerOptions{SupportedProtocolVersions: []string{version}})
			srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
				})
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{Stateless: version >= "2026-07-28"}))
			b.Cleanup(ts.Close)
			mgr := mcptools.New([]agent.MCPServer{{Name: "srv", Transport: agent.TransportStreamableHTTP, URL: ts.URL}}, mcptools.Options{})
			b.Cleanup(func() { _ = mgr.Close() })

			base := agent.Config{BaseURL: "http://model.invalid/v1", Model: "bench", MaxSteps: agent.DefaultMaxSteps,
				HistoryWindow: agent.DefaultHistoryWindow}
			withMCP, withGo := base, base
			withMCP.HTTPClient, withMCP.Tools = toolModel("srv__echo"), []agent.ToolSource{mgr.Server("srv")}
			withGo.HTTPClient, withGo.Tools = toolModel("go_echo"), []agent.ToolSource{agent.Tools{goEcho{}}}
			st := store.NewMemory(store.Options{ThreadTTL: time.Hour, HistoryMax: 1000, IdempotencyTTL: time.Hour})
			b.Cleanup(func() { _ = st.Close() })
			reg, err := processor.NewRegistry(map[string]processor.Processor{
				"mcp": mustAgent(b, withMCP), "go": mustAgent(b, withGo)}, "go")
			require.NoError(b, err)
			chatd := httptest.NewServer(newHandler(st, reg, turn.DefaultConfig))
			b.Cleanup(chatd.Close)

			client := &http.Client{}
			threads := map[string]string{"mcp": benchThread(b, client, chatd.URL, "mcp"), "go": benchThread(b, client, chatd.URL, "go")}
			turn := func(proc string) time.Duration {
				start := time.Now()
				resp, err := client.Post(chatd.URL+"/v1/threads/"+threads[proc]+"/turns", "application/json",
					strings.NewReader(`{"message":"say hi"}`))
				require.NoError(b, err)
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.Equal(b, http.StatusOK, resp.StatusCode, "%s", data)
				require.Contains(b, string(data), `"text":"hi"`)
				return time.Since(start)
			}
			turn("mcp") // connects and lists the tools once
			turn("go")
			var mcpTime, goTime time.Duration
			b.ResetTimer()
			for range b.N {
				mcpTime += turn("mcp")
				goTime += turn("go")
			}
			b.ReportMetric(streamtest.Ms(mcpTime)/float64(b.N), "mcp-ms/turn")
			b.ReportMetric(streamtest.Ms(goTime)/float64(b.N), "go-ms/turn")
			b.ReportMetric(float64(mcpTime)/float64(goTime), "mcp/go")
		})
	}
}
