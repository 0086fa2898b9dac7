package mcptools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"chatd/internal/processor/agent"
)

// The MCP servers of these tests are go-sdk servers: in-process over
// streamable HTTP, or this test binary run again as a stdio server
// (TestMain). Each speaks one protocol generation.

// Protocol generations a test server may be limited to.
const (
	gen2026     = "2026-07-28"
	gen2025     = "2025-06-18"
	gen20251125 = "2025-11-25" // the first with URL-mode questions
)

// stdioEnv, when set, makes the test binary an MCP server over stdio
// speaking that protocol version.
const stdioEnv = "CHATD_MCPTEST_STDIO"

func TestMain(m *testing.M) {
	if v := os.Getenv(stdioEnv); v != "" {
		srv := newTestServer(v, nil)
		t := &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{zeroPriority(os.Stdout)}}
		if err := srv.Run(context.Background(), t); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// priorityMarker stands for priority 0: go-sdk's types drop a zero
// priority (omitempty) when they encode, as chatd's client must not, so the
// test server writes this marker and zeroPriority turns it into the 0 a
// server in another language sends.
const priorityMarker = 0.000123

var (
	markerJSON = []byte(`"priority":0.000123`)
	zeroJSON   = []byte(`"priority":0`)
)

type priorityWriter struct{ w io.Writer }

func zeroPriority(w io.Writer) io.Writer { return priorityWriter{w} }

func (p priorityWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(bytes.ReplaceAll(b, markerJSON, zeroJSON)); err != nil {
		return 0, err
	}
	return len(b), nil
}

type priorityResponseWriter struct {
	http.ResponseWriter
}

func (p priorityResponseWriter) Write(b []byte) (int, error) {
	if _, err := p.ResponseWriter.Write(bytes.ReplaceAll(b, markerJSON, zeroJSON)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (p priorityResponseWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// answers records what the in-process servers' eliciting tools received.
type answers struct {
	mu   sync.Mutex
	list []string
	ch   chan string
	// steps, when set, paces the progress tool: it sends its next
	// notification after a value arrives.
	steps chan struct{}
	// completeNow, when set, makes the watched_url_ask tool send
	// notifications/elicitation/complete when it is closed.
	completeNow chan struct{}
}

func newAnswers() *answers {
	return &answers{ch: make(chan string, 16), steps: make(chan struct{}), completeNow: make(chan struct{})}
}

// next returns the next answer a tool received.
func (a *answers) next(tb testing.TB) string {
	tb.Helper()
	select {
	case s := <-a.ch:
		return s
	case <-time.After(time.Minute):
		tb.Fatal("the server's tool received no answer")
		return ""
	}
}

func (a *answers) add(s string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.list = append(a.list, s)
	a.mu.Unlock()
	a.ch <- s
}

// The blocks the content tool returns, as the server sends them: every
// block type, annotations (priority 0 included), _meta, and a field chatd
// does not know.
const contentJSON = `[
 {"type":"text","text":"hello","annotations":{"audience":["user"],"priority":0},"_meta":{"example.com/x.trace":"t1"}},
 {"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
 {"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},
 {"type":"resource_link","uri":"https://example.com/a","name":"a","title":"A","size":12},
 {"type":"resource","resource":{"uri":"file:///n.txt","mimeType":"text/plain","text":"note"},"annotations":{"priority":0.5}}
]`

var structuredJSON = `{"count":2,"items":["a","b"]}`

func contentResult() *mcp.CallToolResult {
	size := int64(12)
	return &mcp.CallToolResult{
		Content: []mcp.Content{
			&mcp.TextContent{Text: "hello", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: priorityMarker},
				Meta: mcp.Meta{"example.com/x.trace": "t1"}},
			&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "https://example.com/a", Name: "a", Title: "A", Size: &size},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///n.txt", MIMEType: "text/plain", Text: "note"},
				Annotations: &mcp.Annotations{Priority: 0.5}},
		},
		StructuredContent: json.RawMessage(structuredJSON),
	}
}

var nameSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"name": map[string]any{"type": "string", "title": "Name"}},
	"required":   []any{"name"},
}

// askTool asks its question the multi round-trip way; go-sdk turns that
// into elicitation/create inside the call for a 2025-era client.
func askTool(question *mcp.ElicitParams, got *answers) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["q"]; ok {
			data, _ := json.Marshal(r)
			got.add(string(data))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer: " + string(data)}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": question}, RequestState: "state-1"}, nil
	}
}

func newTestServer(version string, got *answers) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "chatd-test", Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{version},
	})
	object := map[string]any{"type": "object"}
	yes := true
	srv.AddTool(&mcp.Tool{Name: "content", Description: "Every kind of block", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return contentResult(), nil })
	srv.AddTool(&mcp.Tool{Name: "fail", Description: "Fails", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "delete_all", Description: "Deletes everything", InputSchema: object,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "peek", Description: "Reads", InputSchema: object,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "peeked"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "ask", Description: "Asks the user's name", InputSchema: object},
		askTool(&mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema}, got))
	srv.AddTool(&mcp.Tool{Name: "bad_ask", Description: "Asks something chatd does not allow", InputSchema: object},
		// A message beyond chatd's 4,096 characters: go-sdk would send it.
		askTool(&mcp.ElicitParams{Message: strings.Repeat("Why? ", 1000), RequestedSchema: nameSchema}, got))
	srv.AddTool(&mcp.Tool{Name: "environment", Description: "Lists the variables it runs with", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "url_ask", Description: "Sends the user to a page", InputSchema: object},
		askTool(&mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/login", ElicitationID: "e1"}, got))
	srv.AddTool(&mcp.Tool{Name: "password_url_ask", Description: "Sends the user to a page with a password in its URL", InputSchema: object},
		askTool(&mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://admin:hunter2@example.com/login", ElicitationID: "e2"}, got))
	srv.AddTool(&mcp.Tool{Name: "script_url_ask", Description: "Sends the user to a script", InputSchema: object},
		askTool(&mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "javascript:alert(document.cookie)", ElicitationID: "e3"}, got))
	addProgressTool(srv, got)
	addURLRequiredTool(srv)
	addCompleteTool(srv, got)
	return srv
}

// addProgressTool adds "progress", which reports three steps (and one for a
// token that is not the call's) before it answers.
func addProgressTool(srv *mcp.Server, got *answers) {
	srv.AddTool(&mcp.Tool{Name: "progress", Description: "Works in three steps", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "not-a-call-of-chatd", Progress: 99, Message: "stray"})
			for i := 1; i <= 3; i++ {
				p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i) / 2, Message: fmt.Sprintf("step %d", i)}
				if i > 1 {
					p.Total = 1.5
				}
				if err := req.Session.NotifyProgress(ctx, p); err != nil {
					return nil, err
				}
				if got != nil && got.steps != nil {
					select {
					case <-got.steps:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "all done"}}}, nil
		})
}

// addURLRequiredTool adds "url_required", which answers -32042 (visit a
// page first) until it is retried with the same arguments.
func addURLRequiredTool(srv *mcp.Server) {
	var mu sync.Mutex
	issued := map[string]bool{}
	srv.AddTool(&mcp.Tool{Name: "url_required", Description: "Needs the user signed in", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			key := string(req.Params.Arguments)
			mu.Lock()
			first := !issued[key]
			issued[key] = first
			mu.Unlock()
			if first {
				return nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{
					{Mode: "url", Message: "Sign in first", URL: "https://example.com/auth", ElicitationID: "pre-1"},
					{Mode: "url", Message: "Then accept the terms", URL: "http://127.0.0.1:9/terms", ElicitationID: "pre-2"},
				})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signed in with " + key}}}, nil
		})
}

// addCompleteTool adds "watched_url_ask" (2025-11-25 and later): it sends the
// user to a page and, when told, says the page is done
// (notifications/elicitation/complete) while its question is open.
func addCompleteTool(srv *mcp.Server, got *answers) {
	srv.AddTool(&mcp.Tool{Name: "watched_url_ask", Description: "Sends the user to a page it watches", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if got != nil && got.completeNow != nil {
				go func() {
					select {
					case <-got.completeNow:
						_ = req.Session.NotifyElicitationComplete(context.WithoutCancel(ctx), &mcp.ElicitationCompleteParams{ElicitationID: "watched"})
					case <-ctx.Done():
					}
				}()
			}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Pay", URL: "https://example.com/pay", ElicitationID: "watched"})
			if err != nil {
				return nil, err
			}
			data, _ := json.Marshal(res)
			got.add(string(data))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "payment: " + string(data)}}}, nil
		})
}

// newHTTPServer serves a test MCP server over streamable HTTP.
func newHTTPServer(tb testing.TB, version string, got *answers) (string, *mcp.Server) {
	tb.Helper()
	srv := newTestServer(version, got)
	// 2026-07-28 is stateless over HTTP; go-sdk serves it only so.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: version >= gen2026})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(priorityResponseWriter{w}, r)
	}))
	tb.Cleanup(ts.Close)
	return ts.URL, srv
}

// serverConfig is the agents-file entry of a test server over transport.
func serverConfig(tb testing.TB, name, transport, version string, got *answers) (agent.MCPServer, *mcp.Server) {
	tb.Helper()
	switch transport {
	case agent.TransportStreamableHTTP:
		url, srv := newHTTPServer(tb, version, got)
		return agent.MCPServer{Name: name, Transport: transport, URL: url}, srv
	default:
		exe, err := os.Executable()
		require.NoError(tb, err)
		return agent.MCPServer{Name: name, Transport: agent.TransportStdio, Command: exe,
			Args: []string{"-test.run=^$"}, Env: map[string]string{stdioEnv: version}}, nil
	}
}
