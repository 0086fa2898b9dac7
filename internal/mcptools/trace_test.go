package mcptools_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"chatd/internal/mcptools"
	"chatd/internal/processor/agent"
)

// A traced tool call has a span, and its trace context reaches the server
// in the HTTP request's traceparent header and, for 2026-07-28, in the
// request's _meta.
func TestToolCallCarriesTheTrace(t *testing.T) {
	for _, version := range []string{gen2026, gen2025} {
		t.Run(version, func(t *testing.T) {
			srv := newTestServer(version, nil)
			srv.AddTool(&mcp.Tool{Name: "meta", Description: "Returns its request's traceparent _meta", InputSchema: map[string]any{"type": "object"}},
				func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					tp, _ := req.Params.Meta["traceparent"].(string)
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "meta:" + tp}}}, nil
				})
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{Stateless: version >= gen2026})
			var mu sync.Mutex
			var headers []string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tp := r.Header.Get("Traceparent"); tp != "" {
					mu.Lock()
					headers = append(headers, tp)
					mu.Unlock()
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			m := newTestManager(t, []agent.MCPServer{{Name: "srv", Transport: agent.TransportStreamableHTTP, URL: ts.URL}}, mcptools.Options{})
			tool := mustTools(t, m.Server("srv"))["srv__meta"]

			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool srv__meta")
			res, err := tool.Call(ctx, agent.ToolCall{ID: "c1", Name: "srv__meta", Arguments: json.RawMessage(`{}`)})
			require.NoError(t, err)
			parent.End()

			var call sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "tools/call meta" {
					call = s
				}
			}
			require.NotNil(t, call)
			assert.Equal(t, parent.SpanContext().SpanID(), call.Parent().SpanID())
			want := "00-" + call.SpanContext().TraceID().String() + "-" + call.SpanContext().SpanID().String() + "-01"
			mu.Lock()
			assert.Contains(t, headers, want, "the HTTP request's traceparent")
			mu.Unlock()
			require.Len(t, res.Content, 1)
			if version >= gen2026 {
				assert.Equal(t, "meta:"+want, res.Content[0].Text())
			} else {
				assert.Equal(t, "meta:", res.Content[0].Text(), "2025 requests' _meta carries no trace")
			}
		})
	}
}
