package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"chatd/internal/api"
	"chatd/internal/openapitest"
	"chatd/internal/processor"
	"chatd/internal/processor/agent"
	"chatd/internal/processor/echo"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// fakeModel is an in-process OpenAI-compatible Chat Completions endpoint that
// answers each request with the next scripted reply and records what it was
// sent. It is the one fake of these tests: the model is the one part that
// cannot run here.
type fakeModel struct {
	*httptest.Server
	mu       sync.Mutex
	script   []reply
	requests []modelRequest
	// fallback answers requests beyond the script; nil fails them.
	fallback *reply
}

// reply is one scripted answer: an HTTP error status, or a stream of chunks.
type reply struct {
	status int               // non-zero: answer with this status and an error body
	header map[string]string // extra response headers (Retry-After-Ms)
	chunks []string          // data lines of the SSE stream, [DONE] appended
	// hang, when set, makes the server wait for the client to go away
	// after the chunks instead of ending the stream.
	hang bool
	// noDone leaves out the final [DONE] and closes the connection after
	// the chunks, as a model that crashed mid-stream would.
	noDone bool
}

// modelRequest is what the model was sent.
type modelRequest struct {
	Model    string           `json:"model"`
	Stream   bool             `json:"stream"`
	Messages []map[string]any `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Authorization string `json:"-"`
	// Traceparent is the request's W3C trace context header.
	Traceparent string `json:"-"`
}

func newFakeModel(tb testing.TB, script ...reply) *fakeModel {
	tb.Helper()
	m := &fakeModel{script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", m.serve)
	m.Server = httptest.NewServer(mux)
	tb.Cleanup(m.Close)
	return m
}

func (m *fakeModel) baseURL() string { return m.URL + "/v1" }

func (m *fakeModel) add(script ...reply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = append(m.script, script...)
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	var req modelRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Authorization = r.Header.Get("Authorization")
	req.Traceparent = r.Header.Get("Traceparent")
	m.mu.Lock()
	m.requests = append(m.requests, req)
	var rep reply
	switch {
	case len(m.script) > 0:
		rep, m.script = m.script[0], m.script[1:]
	case m.fallback != nil:
		rep = *m.fallback
	default:
		m.mu.Unlock()
		http.Error(w, `{"error":{"message":"unscripted request"}}`, http.StatusTeapot)
		return
	}
	m.mu.Unlock()

	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `{"error":{"message":"scripted %d","type":"test","code":"scripted"}}`, rep.status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher := w.(http.Flusher)
	for _, c := range rep.chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		flusher.Flush()
	}
	if rep.hang {
		<-r.Context().Done()
		return
	}
	if rep.noDone {
		return
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	flusher.Flush()
}

// sent returns the requests the model received.
func (m *fakeModel) sent() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelRequest(nil), m.requests...)
}

// chunk is one streamed chat.completion.chunk with the given delta.
func chunk(delta map[string]any, finish string) string {
	choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		choice["finish_reason"] = finish
	}
	data, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
		"choices": []any{choice},
	})
	return string(data)
}

// textReply streams pieces as content deltas, then stops.
func textReply(pieces ...string) reply {
	chunks := []string{chunk(map[string]any{"role": "assistant", "content": ""}, "")}
	for _, p := range pieces {
		chunks = append(chunks, chunk(map[string]any{"content": p}, ""))
	}
	chunks = append(chunks, chunk(map[string]any{}, "stop"))
	return reply{chunks: chunks}
}

// call is one tool call of a scripted reply.
type call struct {
	id, name, args string
}

// toolReply streams optional text, then the tool calls (each one's arguments
// split in two pieces, as real models stream them).
func toolReply(text string, calls ...call) reply {
	chunks := []string{chunk(map[string]any{"role": "assistant"}, "")}
	if text != "" {
		chunks = append(chunks, chunk(map[string]any{"content": text}, ""))
	}
	for i, c := range calls {
		half := len(c.args) / 2
		chunks = append(chunks,
			chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "id": c.id, "type": "function",
				"function": map[string]any{"name": c.name, "arguments": c.args[:half]},
			}}}, ""),
			chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": c.args[half:]},
			}}}, ""))
	}
	chunks = append(chunks, chunk(map[string]any{}, "tool_calls"))
	return reply{chunks: chunks}
}

// agentConfig is an agent on the fake model with the defaults of the agents
// file.
func agentConfig(m *fakeModel) agent.Config {
	return agent.Config{
		BaseURL: m.baseURL(), Model: "test-model", MaxSteps: agent.DefaultMaxSteps,
		HistoryWindow: agent.DefaultHistoryWindow, AskUser: true,
	}
}

func mustAgent(tb testing.TB, cfg agent.Config) *agent.Agent {
	tb.Helper()
	a, err := agent.New(cfg)
	require.NoError(tb, err)
	return a
}

var testStoreOpts = store.Options{ThreadTTL: time.Hour, HistoryMax: 1000, IdempotencyTTL: time.Hour}

// chatd is a chatd API on real HTTP serving the agent as "agent" (and echo).
type chatd struct {
	*httptest.Server
	v *openapitest.Validator
}

func newChatd(tb testing.TB, st api.Store, a processor.Processor, cfg turn.Config) *chatd {
	tb.Helper()
	reg, err := processor.NewRegistry(map[string]processor.Processor{"agent": a, "echo": echo.New()}, "agent")
	require.NoError(tb, err)
	srv := httptest.NewServer(newHandler(st, reg, cfg))
	tb.Cleanup(srv.Close)
	return &chatd{Server: srv, v: openapitest.New(tb)}
}

func newMemoryChatd(tb testing.TB, a processor.Processor) *chatd {
	tb.Helper()
	st := store.NewMemory(testStoreOpts)
	tb.Cleanup(func() { _ = st.Close() })
	return newChatd(tb, st, a, turn.DefaultConfig)
}

// do sends a JSON request and returns the status and the body, checked
// against openapi.yaml.
func (c *chatd) do(tb testing.TB, method, path string, body any) (int, []byte) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(tb, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	require.NoError(tb, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Client().Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	return resp.StatusCode, c.v.Check(tb, resp)
}

func (c *chatd) mustThread(tb testing.TB) string {
	tb.Helper()
	status, body := c.do(tb, http.MethodPost, "/v1/threads", map[string]string{"processor": "agent"})
	require.Equal(tb, http.StatusCreated, status, "%s", body)
	var th struct {
		ID string `json:"id"`
	}
	require.NoError(tb, json.Unmarshal(body, &th))
	return th.ID
}

// turnResult is the part of a TurnResult these tests read.
type turnResult struct {
	Status  string `json:"status"`
	Message struct {
		Text          string            `json:"message"`
		ContentBlocks []json.RawMessage `json:"content_blocks"`
		Meta          map[string]any    `json:"_meta"`
	} `json:"message"`
	Elicitation *struct {
		Mode            string         `json:"mode"`
		URL             string         `json:"url"`
		ElicitationID   string         `json:"elicitationId"`
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
		Meta            map[string]any `json:"_meta"`
	} `json:"elicitation"`
}

func (r turnResult) elicitationID() string {
	if r.Elicitation == nil {
		return ""
	}
	id, _ := r.Elicitation.Meta["drupal.org/ai.elicitation_id"].(string)
	return id
}

// toolCalls returns the reply's drupal.org/ai.tool_call entries.
func (r turnResult) toolCalls() []map[string]any {
	list, _ := r.Message.Meta["drupal.org/ai.tool_call"].([]any)
	out := make([]map[string]any, len(list))
	for i, e := range list {
		out[i], _ = e.(map[string]any)
	}
	return out
}

func (c *chatd) turn(tb testing.TB, thread, text string) (int, []byte) {
	tb.Helper()
	return c.do(tb, http.MethodPost, "/v1/threads/"+thread+"/turns", map[string]string{"message": text})
}

func (c *chatd) mustTurn(tb testing.TB, thread, text string) turnResult {
	tb.Helper()
	status, body := c.turn(tb, thread, text)
	require.Equal(tb, http.StatusOK, status, "%s", body)
	var r turnResult
	require.NoError(tb, json.Unmarshal(body, &r))
	return r
}

func (c *chatd) mustAnswer(tb testing.TB, thread, id string, result any) turnResult {
	tb.Helper()
	status, body := c.do(tb, http.MethodPost, "/v1/threads/"+thread+"/elicitations/"+id, result)
	require.Equal(tb, http.StatusOK, status, "%s", body)
	var r turnResult
	require.NoError(tb, json.Unmarshal(body, &r))
	return r
}

// problem is the part of a problem+json these tests read.
type problem struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func mustProblem(tb testing.TB, body []byte) problem {
	tb.Helper()
	var p problem
	require.NoError(tb, json.Unmarshal(body, &p), "%s", body)
	return p
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data []byte
	at   time.Time // when the client read it
}

// stream posts a streamed turn and returns a reader of its events.
func (c *chatd) stream(tb testing.TB, ctx context.Context, thread, text string) *eventReader {
	tb.Helper()
	data, _ := json.Marshal(map[string]string{"message": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/v1/threads/"+thread+"/turns", bytes.NewReader(data))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Client().Do(req)
	require.NoError(tb, err)
	require.Equal(tb, http.StatusOK, resp.StatusCode)
	tb.Cleanup(func() { _ = resp.Body.Close() })
	return &eventReader{r: bufio.NewReader(resp.Body), body: resp.Body}
}

type eventReader struct {
	r    *bufio.Reader
	body io.Closer
}

// next returns the next event (comments skipped), or io.EOF.
func (e *eventReader) next() (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			return sseEvent{}, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.name != "" {
				ev.at = time.Now()
				return ev, nil
			}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = append(ev.data, strings.TrimPrefix(line, "data: ")...)
		}
	}
}

// all reads every remaining event.
func (e *eventReader) all(tb testing.TB) []sseEvent {
	tb.Helper()
	var out []sseEvent
	for {
		ev, err := e.next()
		if err == io.EOF {
			return out
		}
		require.NoError(tb, err)
		out = append(out, ev)
	}
}

// newHandler is chatd's API on st, with no authentication, its turns run
// by an engine configured by cfg.
func newHandler(st api.Store, reg *processor.Registry, cfg turn.Config) http.Handler {
	metrics := api.NewMetrics()
	engine := turn.New(turn.Deps{Store: st, Processors: reg, Observer: metrics, Config: cfg})
	return api.NewServer(api.Deps{Store: st, Engine: engine, Processors: reg, Auth: api.AnonymousAuth{}, Metrics: metrics, Config: api.DefaultConfig,
		TracerProvider: otel.GetTracerProvider()})
}
