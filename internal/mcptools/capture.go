package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"chatd/internal/processor/agent"
)

// go-sdk decodes a tool result into typed content and loses what its types
// cannot hold (an annotation priority of 0, fields it does not know). chatd
// appends a tool's blocks exactly as the server sent them, so it keeps the
// raw JSON of every tools/call result, found by the call's progress token,
// which chatd mints for each call: at the connection for stdio, and in the
// HTTP response of the POST that carried the call for streamable HTTP (the
// only place go-sdk leaves a hook without losing its session handling).

// capture holds the raw results of tool calls by progress token until the
// caller takes them.
type capture struct {
	mu      sync.Mutex
	results map[string]json.RawMessage
	// sinks receive the progress of the calls in flight, by progress token.
	sinks map[string]func(agent.ToolStatus)
	// tasks receive the status notifications of the tasks in flight, by
	// task ID.
	tasks map[string]func(task)
	// taskSupport is each tool's execution.taskSupport, from the raw
	// tools/list (go-sdk's Tool has no execution).
	taskSupport map[string]string
}

func newCapture() *capture {
	return &capture{results: map[string]json.RawMessage{}, sinks: map[string]func(agent.ToolStatus){},
		tasks: map[string]func(task){}, taskSupport: map[string]string{}}
}

const (
	methodProgress   = "notifications/progress"
	methodTaskStatus = "notifications/tasks/status"
)

// notified hands a notification the server sent to the call it is about:
// progress by its token, a task's status (2025-11-25) by the task's ID.
// Others are go-sdk's to handle.
func (c *capture) notified(req *jsonrpc.Request) {
	if req.ID.IsValid() {
		return
	}
	switch req.Method {
	case methodProgress:
		c.progress(req.Params)
	case methodTaskStatus:
		var t task
		if json.Unmarshal(req.Params, &t) != nil || t.TaskID == "" || t.Status == "" {
			return
		}
		c.mu.Lock()
		sink := c.tasks[t.TaskID]
		c.mu.Unlock()
		if sink != nil {
			sink(t)
		}
	}
}

// watchTask sends the status notifications of task id to sink until the
// returned func is called.
func (c *capture) watchTask(id string, sink func(task)) (unwatch func()) {
	return register(c, c.tasks, id, sink)
}

// register keeps v in m (one of c's maps) under key until the returned func
// is called.
func register[T any](c *capture, m map[string]T, key string, v T) (unregister func()) {
	c.mu.Lock()
	m[key] = v
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(m, key)
		c.mu.Unlock()
	}
}

// listed records the execution.taskSupport of the tools of a raw
// tools/list result.
func (c *capture) listed(result json.RawMessage) {
	var r struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range r.Tools {
		c.taskSupport[t.Name] = t.Execution.TaskSupport
	}
}

// taskRequired reports whether the server said the tool must run as a task.
func (c *capture) taskRequired(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taskSupport[name] == "required"
}

// watch sends the progress notifications of the call with token to sink
// until the returned func is called.
func (c *capture) watch(token string, sink func(agent.ToolStatus)) (unwatch func()) {
	return register(c, c.sinks, token, sink)
}

// progress hands a notifications/progress, read from the wire so its
// numbers are as the server wrote them, to the call it belongs to. One for
// a token chatd did not mint, or a call that ended, is ignored.
func (c *capture) progress(params json.RawMessage) {
	st, token, ok := decodeProgress(params)
	if !ok {
		return
	}
	c.mu.Lock()
	sink := c.sinks[token]
	c.mu.Unlock()
	if sink != nil {
		sink(st)
	}
}

// decodeProgress reads notifications/progress params; ok is false unless
// they carry a string token and a numeric progress.
func decodeProgress(params json.RawMessage) (st agent.ToolStatus, token string, ok bool) {
	var p struct {
		ProgressToken any             `json:"progressToken"`
		Progress      json.RawMessage `json:"progress"`
		Total         json.RawMessage `json:"total"`
		Message       any             `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil {
		return st, "", false
	}
	token, _ = p.ProgressToken.(string)
	progress, isNumber := number(p.Progress)
	if token == "" || !isNumber {
		return st, "", false
	}
	st.Progress = progress
	st.Total, _ = number(p.Total)
	st.Message, _ = p.Message.(string)
	return st, token, true
}

// number returns raw as a json.Number when it is a JSON number.
func number(raw json.RawMessage) (json.Number, bool) {
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if len(raw) == 0 || dec.Decode(&v) != nil {
		return "", false
	}
	n, ok := v.(json.Number)
	return n, ok
}

func (c *capture) put(token string, result json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results[token] = bytes.Clone(result)
}

func (c *capture) take(token string) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.results[token]
	delete(c.results, token)
	return r, ok
}

// callToken returns the progress token of a tools/call request, or "".
func callToken(req *jsonrpc.Request) string {
	if req.Method != "tools/call" || !req.ID.IsValid() {
		return ""
	}
	var p struct {
		Meta struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return ""
	}
	s, _ := p.Meta.ProgressToken.(string)
	return s
}

// captureTransport wraps a transport whose connection can be wrapped
// without loss (stdio: go-sdk's stdio connection has no hidden methods).
type captureTransport struct {
	inner mcp.Transport
	cap   *capture
	conn  *captureConn // once connected
}

func (t *captureTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &captureConn{Connection: conn, cap: t.cap, pending: map[string]string{}, lists: map[string]bool{},
		calls: map[string]chan *jsonrpc.Response{}}
	return t.conn, nil
}

type captureConn struct {
	mcp.Connection
	cap     *capture
	mu      sync.Mutex
	pending map[string]string                 // JSON-RPC ID → progress token
	lists   map[string]bool                   // IDs of tools/list requests
	calls   map[string]chan *jsonrpc.Response // IDs of chatd's own requests (call)
}

// call sends a request of chatd's own on the connection — one go-sdk does
// not know (tasks) — and returns its result; the response never reaches
// go-sdk.
func (c *captureConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	data, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id, err := jsonrpc.MakeID("chatd-" + uuid.NewString())
	if err != nil {
		return nil, err
	}
	key := idKey(id)
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	c.calls[key] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.calls, key)
		c.mu.Unlock()
	}()
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: data}); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, resp.Error)
		}
		return resp.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// failCalls ends chatd's own requests in flight when the connection
// cannot be read any more: no response will come.
func (c *captureConn) failCalls(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, ch := range c.calls {
		ch <- &jsonrpc.Response{Error: fmt.Errorf("the connection to the server ended: %w", err)}
		delete(c.calls, key)
	}
}

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		if token := callToken(req); token != "" {
			c.mu.Lock()
			c.pending[idKey(req.ID)] = token
			c.mu.Unlock()
		}
		if req.Method == "tools/list" && req.ID.IsValid() {
			c.mu.Lock()
			c.lists[idKey(req.ID)] = true
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.failCalls(err)
			return msg, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			c.cap.notified(req)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return msg, nil
		}
		key := idKey(resp.ID)
		c.mu.Lock()
		token, found := c.pending[key]
		delete(c.pending, key)
		list := c.lists[key]
		delete(c.lists, key)
		own := c.calls[key]
		c.mu.Unlock()
		if own != nil {
			own <- resp
			continue
		}
		if found && resp.Result != nil {
			c.cap.put(token, resp.Result)
		}
		if list && resp.Result != nil {
			c.cap.listed(resp.Result)
		}
		return msg, nil
	}
}

// captureRoundTripper adds the configured headers to every request and
// keeps the raw result of the tools/call a POST carries from its response
// (JSON or an SSE stream), and the taskSupport of the tools a tools/list
// result lists. With no cap it only adds headers.
type captureRoundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	cap     *capture
}

func (rt *captureRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range rt.headers {
		req.Header.Set(k, v)
	}
	propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	var keep func(json.RawMessage) // what to do with the response's result
	if rt.cap != nil && req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			if r, ok := msg.(*jsonrpc.Request); ok {
				keep = rt.keeper(r)
			}
		}
	}
	// The stream a GET opens carries the server's notifications outside
	// any request (a task's status among them).
	stream := rt.cap != nil && req.Method == http.MethodGet
	resp, err := rt.base.RoundTrip(req)
	if err != nil || (keep == nil && !stream) {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &captureBody{ReadCloser: resp.Body, keep: keep, cap: rt.cap, sse: mt == "text/event-stream"}
	return resp, nil
}

// keeper returns what to do with the result of req, or nil when chatd
// keeps nothing of it.
func (rt *captureRoundTripper) keeper(req *jsonrpc.Request) func(json.RawMessage) {
	if token := callToken(req); token != "" {
		return func(result json.RawMessage) { rt.cap.put(token, result) }
	}
	if req.Method == "tools/list" && req.ID.IsValid() {
		return rt.cap.listed
	}
	return nil
}

// captureBody reads along with go-sdk and records the first JSON-RPC
// response with a result it sees.
type captureBody struct {
	io.ReadCloser
	keep func(json.RawMessage)
	cap  *capture
	sse  bool
	buf  []byte // unread partial line (SSE) or the whole body (JSON)
	data []byte // the current SSE event's data
	done bool
}

func (b *captureBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.done {
		b.buf = append(b.buf, p[:n]...)
		if b.sse {
			b.lines()
		} else if err == io.EOF {
			b.message(b.buf)
		}
	}
	return n, err
}

func (b *captureBody) lines() {
	consumed := 0
	for !b.done {
		i := bytes.IndexByte(b.buf[consumed:], '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(b.buf[consumed:consumed+i], []byte("\r"))
		consumed += i + 1
		switch {
		case len(line) == 0:
			if len(b.data) > 0 {
				b.message(b.data)
				b.data = nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if len(b.data) > 0 {
				b.data = append(b.data, '\n')
			}
			b.data = append(b.data, d...)
		}
	}
	if !b.done {
		b.buf = append(b.buf[:0], b.buf[consumed:]...)
	}
}

func (b *captureBody) message(data []byte) {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		b.cap.notified(req)
		return
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Result != nil && b.keep != nil {
		b.keep(resp.Result)
		b.done = true
		b.buf, b.data = nil, nil
	}
}
