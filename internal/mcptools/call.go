package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor/agent"
	"chatd/internal/telemetry"
)

// toolName is the function name OpenAI-compatible APIs accept.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// maxRounds bounds the input-required rounds of one call answered without
// the user (declined invalid questions, roots), so a server that keeps
// asking cannot loop forever.
const maxRounds = 10

// tool is one tool of a server, an agent.Tool.
type tool struct {
	s    *Server
	name string // the server's name of the tool
	def  agent.ToolDefinition
}

func (t *tool) Definition() agent.ToolDefinition { return t.def }

// Call implements agent.Tool.
func (t *tool) Call(ctx context.Context, c agent.ToolCall) (agent.ToolResult, error) {
	if c.Resume == nil {
		return t.s.run(ctx, t.name, c.Arguments, nil, c)
	}
	st, err := decodeToolState(c.Resume.State)
	if err != nil {
		return agent.ToolResult{}, err
	}
	switch st.Kind {
	case kindInputRequired:
		return t.s.answerInput(ctx, t.name, c.Arguments, st, c.Resume.Result, c)
	case kindHeld:
		return t.s.deliver(ctx, st, c.Resume.Result, c.Report)
	case kindURLRequired:
		return t.s.afterPrerequisite(ctx, t.name, c.Arguments, st, c.Resume.Result, c)
	}
	return agent.ToolResult{}, fmt.Errorf("unknown tool state %q", st.Kind)
}

// toolState is an MCP tool's part of the agent's pause state (the agent
// keeps the call's name and arguments):
//
//	{"kind": "input_required", "request_state": "<the server's requestState>",
//	 "asking": "<ID of the input request the user is answering>",
//	 "questions": {"<ID>": <elicitation params still to ask>},
//	 "responses": {"<ID>": <input response>}}
//
// for a 2026-07-28 server, or for a call held open on an instance:
//
//	{"kind": "held", "instance": "<instance ID>", "hold": "<hold ID>"}
//
// or for a call the server refused until the user visits pages (error
// -32042), to be retried with the same arguments once they have:
//
//	{"kind": "url_required", "prerequisites": [<URL-mode params still to ask>]}
type toolState struct {
	Kind          string                     `json:"kind"`
	RequestState  string                     `json:"request_state,omitempty"`
	Asking        string                     `json:"asking,omitempty"`
	Questions     map[string]json.RawMessage `json:"questions,omitempty"`
	Responses     map[string]json.RawMessage `json:"responses,omitempty"`
	Instance      string                     `json:"instance,omitempty"`
	Hold          string                     `json:"hold,omitempty"`
	Prerequisites []json.RawMessage          `json:"prerequisites,omitempty"`
}

const (
	kindInputRequired = "input_required"
	kindHeld          = "held"
	kindURLRequired   = "url_required"
)

func decodeToolState(data []byte) (toolState, error) {
	var st toolState
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("tool state: %w", err)
	}
	return st, nil
}

// errNotCompleted is what the model hears of a held call that cannot go on.
var errNotCompleted = errors.New("the tool did not complete")

// call is one tools/call in flight on a session.
type call struct {
	s     *Server
	x     *session
	asks  chan *ask    // questions from the server (2025-era)
	done  chan outcome // the call's end
	stop  func()       // cancels the call
	once  sync.Once    // releases the session once
	hold  string       // the hold ID while held
	ask   *ask         // the question being held
	timer interface{ Stop() bool }

	task     bool          // the call runs as a task (task.go, taskext.go)
	relaunch func()        // sends the tools/call (again, for a retry)
	endSpan  func()        // ends the call's span, when traced
	unwatch  func()        // stops the call's progress
	progress chan struct{} // signalled when latest changed
	pmu      sync.Mutex
	pending  []agent.ToolStatus // reported by the server, not yet to the caller

	// thread and principal are the turn's: principal's held questions
	// count against MaxHeldPerPrincipal, and a held URL-mode question the
	// server says is complete is answered on thread.
	thread, principal string
}

// noteProgress keeps the server's report for the waiting caller. A task's
// status changes are each kept; a caller slower than the server's progress
// sees its latest only.
func (c *call) noteProgress(st agent.ToolStatus) {
	c.pmu.Lock()
	if n := len(c.pending); n > 0 && st.Status == "" && c.pending[n-1].Status == "" {
		c.pending[n-1] = st
	} else {
		c.pending = append(c.pending, st)
	}
	c.pmu.Unlock()
	select {
	case c.progress <- struct{}{}:
	default:
	}
}

func (c *call) takeProgress() []agent.ToolStatus {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	list := c.pending
	c.pending = nil
	return list
}

// ask is a question the server sent inside the call, waiting for its answer.
type ask struct {
	request *elicit.Request
	params  json.RawMessage // as chatd checked it, for another instance
	answer  chan *mcp.ElicitResult
}

type outcome struct {
	res *mcp.CallToolResult
	raw json.RawMessage
	err error
}

// start sends tools/call on a session of its own and returns the call in
// flight. The call does not end with ctx: it may be held for an answer.
func (s *Server) start(ctx context.Context, name string, args json.RawMessage, responses mcp.InputResponseMap, state string) (*call, error) {
	x, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &call{s: s, x: x, asks: make(chan *ask), done: make(chan outcome, 1), stop: cancel, progress: make(chan struct{}, 1)}
	s.mu.Lock()
	x.current = c
	s.mu.Unlock()
	token := uuid.NewString()
	c.unwatch = s.cap.watch(token, c.noteProgress)
	params := &mcp.CallToolParams{Name: name, Arguments: args, InputResponses: responses, RequestState: state,
		Meta: mcp.Meta{"progressToken": token}}
	var span trace.Span
	cctx, span = telemetry.StartChild(cctx, tracerName, "tools/call "+name, trace.SpanKindClient)
	traced := span.IsRecording()
	if traced {
		span.SetAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", name),
			attribute.String("chatd.mcp.server", s.cfg.Name))
	}
	if traced && usesRequestMeta(x.cs) {
		// 2026-07-28 carries the trace context in the request's _meta, so
		// it reaches the server over any transport.
		propagation.TraceContext{}.Inject(cctx, metaCarrier(params.Meta))
	}
	// 2026-07-28 moved tasks to an extension: there a tool is called
	// plainly, whatever it lists, and the server decides whether to answer
	// with a task.
	c.task = s.cap.taskRequired(name) && !usesRequestMeta(x.cs)
	c.relaunch = func() {
		if c.task {
			go c.runTask(cctx, params)
			return
		}
		go func() {
			res, err := x.cs.CallTool(cctx, params)
			raw, _ := s.cap.take(token)
			if t, ok := taskHandle(raw); ok && err == nil && usesRequestMeta(x.cs) {
				res = nil
				raw, err = c.followTask(cctx, t)
			}
			if traced && err != nil {
				span.SetStatus(codes.Error, "tool call failed")
			}
			c.done <- outcome{res: res, raw: raw, err: err}
		}()
	}
	if traced {
		c.endSpan = func() { span.End() }
	}
	c.relaunch()
	return c, nil
}

// sessionBound reports whether a retry of the call must use its session:
// every transport but 2026-07-28 over HTTP, which has no sessions.
func (c *call) sessionBound() bool {
	return c.s.cfg.Transport != agent.TransportStreamableHTTP || !usesRequestMeta(c.x.cs)
}

// keepsSession reports whether a finished call keeps its session for a
// retry: the server answered -32042 and will know the user by it.
func (c *call) keepsSession(o outcome) bool {
	_, ok, err := prerequisites(o.err)
	return ok && err == nil && c.sessionBound()
}

// awaitPages asks the user to visit the pages a -32042 error named, one
// after another (the first is returned to hold the call with, the others
// are sent as the call's next questions), then retries the call on its
// session; a page the user does not accept ends the call.
func (c *call) awaitPages(pages []json.RawMessage) (*ask, error) {
	asks := make([]*ask, len(pages))
	for i, p := range pages {
		req, err := askedRequest(p)
		if err != nil {
			return nil, err
		}
		asks[i] = &ask{request: req, params: p, answer: make(chan *mcp.ElicitResult, 1)}
	}
	go func() {
		for i, a := range asks {
			if i > 0 {
				c.asks <- a
			}
			if res := <-a.answer; res.Action != string(elicit.Accept) {
				c.done <- outcome{err: fmt.Errorf("the user did not complete the page the tool needs (%s)", res.Action)}
				return
			}
		}
		c.relaunch()
	}()
	return asks[0], nil
}

// finish releases the call's session.
func (c *call) finish() {
	c.once.Do(func() {
		if c.endSpan != nil {
			c.endSpan()
		}
		c.unwatch()
		c.stop()
		c.s.release(c.x)
	})
}

// next waits for the call to end or ask the user something, passing the
// server's progress to report (which may be nil) meanwhile.
func (c *call) next(ctx context.Context, report func(agent.ToolStatus)) (*ask, outcome, error) {
	for {
		select {
		case o := <-c.done:
			for _, st := range c.takeProgress() {
				if report != nil {
					report(st)
				}
			}
			if !c.keepsSession(o) {
				c.finish()
			}
			return nil, o, nil
		case a := <-c.asks:
			return a, outcome{}, nil
		case <-c.progress:
			for _, st := range c.takeProgress() {
				if report != nil {
					report(st)
				}
			}
		case <-ctx.Done():
			// The server may still ask something before it sees the
			// cancellation: drain answers it cancel.
			c.stop()
			go c.drain()
			return nil, outcome{}, ctx.Err()
		}
	}
}

// abandon answers a held question cancel and lets the call end unread; the
// returned channel is closed when it has ended.
func (c *call) abandon() <-chan struct{} {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.s.m.mu.Lock()
	a := c.ask
	c.ask = nil
	c.s.m.mu.Unlock()
	if a != nil {
		a.answer <- &mcp.ElicitResult{Action: string(elicit.Cancel)}
	}
	if c.task {
		// Nobody will read the task's result: it is cancelled rather
		// than left running on the server.
		c.stop()
	}
	ended := make(chan struct{})
	go func() {
		c.drain()
		close(ended)
	}()
	return ended
}

// drain lets a call nobody waits for end, cancelling further questions.
func (c *call) drain() {
	for {
		select {
		case <-c.done:
			c.finish()
			return
		case a := <-c.asks:
			a.answer <- &mcp.ElicitResult{Action: string(elicit.Cancel)}
		}
	}
}

// run calls a tool and returns its result, or pauses with the server's
// question.
//
// tc is the agent's call: its Report, its thread and principal.
func (s *Server) run(ctx context.Context, name string, args json.RawMessage, st *toolState, tc agent.ToolCall) (agent.ToolResult, error) {
	var responses mcp.InputResponseMap
	state := ""
	if st != nil {
		var err error
		if responses, err = inputResponses(st.Responses); err != nil {
			return agent.ToolResult{}, err
		}
		state = st.RequestState
	}
	for round := 0; ; round++ {
		c, err := s.start(ctx, name, args, responses, state)
		if err != nil {
			return agent.ToolResult{}, err
		}
		c.thread, c.principal = tc.ThreadID, tc.Principal
		a, o, err := c.next(ctx, tc.Report)
		if err != nil {
			return agent.ToolResult{}, err
		}
		if a != nil {
			return s.m.hold(ctx, c, a)
		}
		if pre, ok, err := prerequisites(o.err); ok {
			if err != nil {
				return agent.ToolResult{}, err
			}
			if !c.keepsSession(o) {
				return pauseOnPrerequisite(toolState{Kind: kindURLRequired, Prerequisites: pre})
			}
			a, err := c.awaitPages(pre)
			if err != nil {
				c.finish()
				return agent.ToolResult{}, err
			}
			return s.m.hold(ctx, c, a)
		}
		if o.err != nil {
			return agent.ToolResult{}, o.err
		}
		res, next, err := s.result(o)
		if err != nil || next == nil {
			return res, err
		}
		// The server needs input (2026-07-28): ask the user the first
		// question, or retry at once if chatd answered everything itself.
		if next.Asking != "" {
			return pauseOn(*next)
		}
		if round >= maxRounds {
			return agent.ToolResult{}, fmt.Errorf("the server asked for input %d times without an answer chatd could give", maxRounds)
		}
		if responses, err = inputResponses(next.Responses); err != nil {
			return agent.ToolResult{}, err
		}
		state = next.RequestState
	}
}

// answerInput takes the user's answer to an input request of a 2026-07-28
// server: the next question, or the call retried with every response.
func (s *Server) answerInput(ctx context.Context, name string, args json.RawMessage, st toolState, res elicit.Result, tc agent.ToolCall) (agent.ToolResult, error) {
	data, err := json.Marshal(mcp.ElicitResult{Action: string(res.Action), Content: res.Content})
	if err != nil {
		return agent.ToolResult{}, err
	}
	if st.Responses == nil {
		st.Responses = map[string]json.RawMessage{}
	}
	st.Responses[st.Asking] = data
	delete(st.Questions, st.Asking)
	st.Asking = ""
	if len(st.Questions) > 0 {
		if err := st.askNext(); err != nil {
			return agent.ToolResult{}, err
		}
		if st.Asking != "" {
			return pauseOn(st)
		}
	}
	return s.run(ctx, name, args, &st, tc)
}

// pauseOn pauses the turn with the question st is asking.
func pauseOn(st toolState) (agent.ToolResult, error) {
	req, err := askedRequest(st.Questions[st.Asking])
	if err != nil {
		return agent.ToolResult{}, err // checked before
	}
	data, err := json.Marshal(st)
	if err != nil {
		return agent.ToolResult{}, err
	}
	return agent.ToolResult{Pause: &agent.ToolPause{Request: req, State: data}}, nil
}

// askNext picks the next question to ask the user (in ID order), declining
// those chatd cannot ask.
func (st *toolState) askNext() error {
	ids := make([]string, 0, len(st.Questions))
	for id := range st.Questions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		checked, err := checkQuestion(st.Questions[id])
		if err != nil {
			st.Responses[id] = json.RawMessage(`{"action":"decline"}`)
			delete(st.Questions, id)
			continue
		}
		st.Questions[id] = checked
		st.Asking = id
		return nil
	}
	return nil
}

// checkQuestion checks elicitation/create params as chatd would show them:
// a form whose schema is within what internal/elicit allows, or a URL-mode
// question whose URL chatd may show (elicit.CheckURL). It returns a form's
// params without mode (chatd never emits it), a URL-mode question's as
// {mode, message, url, elicitationId?}.
func checkQuestion(params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	if mode, ok := p["mode"]; ok {
		var m string
		_ = json.Unmarshal(mode, &m)
		if m == elicit.ModeURL {
			return checkURLQuestion(params)
		}
		if m != "form" && m != "" {
			return nil, fmt.Errorf("mode %q: chatd asks form and URL-mode questions only", m)
		}
		delete(p, "mode")
	}
	if meta, ok := p["_meta"]; ok && (string(meta) == "null" || string(meta) == "{}") {
		delete(p, "_meta")
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if _, err := elicit.ParseParams(data); err != nil {
		return nil, err
	}
	return data, nil
}

// urlQuestion is a URL-mode question's params as chatd keeps them.
type urlQuestion struct {
	Mode          string `json:"mode"`
	Message       string `json:"message"`
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId,omitempty"`
}

func checkURLQuestion(params json.RawMessage) (json.RawMessage, error) {
	var q urlQuestion
	if err := json.Unmarshal(params, &q); err != nil {
		return nil, err
	}
	if _, err := elicit.NewURLRequest(q.Message, q.URL, q.ElicitationID); err != nil {
		return nil, err
	}
	return json.Marshal(q)
}

// askedRequest is the elicitation that asks the user checked params (from
// checkQuestion), with a fresh chatd ID.
func askedRequest(params json.RawMessage) (*elicit.Request, error) {
	var q urlQuestion
	if json.Unmarshal(params, &q) == nil && q.Mode == elicit.ModeURL {
		return elicit.NewURLRequest(q.Message, q.URL, q.ElicitationID)
	}
	return elicit.ParseParams(params)
}

// prerequisites reads the URL-mode questions of a -32042 error (the server
// wants the user to visit pages before it runs the call). ok is false for
// any other error; err is set when chatd cannot show every question.
func prerequisites(callErr error) (pre []json.RawMessage, ok bool, err error) {
	var rpcErr *jsonrpc.Error
	if !errors.As(callErr, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
		return nil, false, nil
	}
	var data struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if len(rpcErr.Data) > 0 {
		_ = json.Unmarshal(rpcErr.Data, &data)
	}
	if len(data.Elicitations) == 0 {
		return nil, true, errors.New("the server requires the user to visit a page but named none")
	}
	for _, e := range data.Elicitations {
		checked, err := checkURLQuestion(e)
		if err != nil {
			return nil, true, fmt.Errorf("the server requires the user to visit a page chatd does not show: %v", err)
		}
		pre = append(pre, checked)
	}
	return pre, true, nil
}

func pauseOnPrerequisite(st toolState) (agent.ToolResult, error) {
	req, err := askedRequest(st.Prerequisites[0])
	if err != nil {
		return agent.ToolResult{}, err // checked before
	}
	data, err := json.Marshal(st)
	if err != nil {
		return agent.ToolResult{}, err
	}
	return agent.ToolResult{Pause: &agent.ToolPause{Request: req, State: data}}, nil
}

// afterPrerequisite takes the user's answer to a page a -32042 error named:
// once every page is done the call is retried with the same arguments.
func (s *Server) afterPrerequisite(ctx context.Context, name string, args json.RawMessage, st toolState, res elicit.Result,
	tc agent.ToolCall) (agent.ToolResult, error) {
	if res.Action != elicit.Accept {
		return agent.ToolResult{}, fmt.Errorf("the user did not complete the page the tool needs (%s)", res.Action)
	}
	if len(st.Prerequisites) > 1 {
		st.Prerequisites = st.Prerequisites[1:]
		return pauseOnPrerequisite(st)
	}
	return s.run(ctx, name, args, nil, tc)
}

// inputResponses turns the stored responses into go-sdk's typed map.
func inputResponses(stored map[string]json.RawMessage) (mcp.InputResponseMap, error) {
	if len(stored) == 0 {
		return nil, nil
	}
	out := make(mcp.InputResponseMap, len(stored))
	for id, raw := range stored {
		var probe struct {
			Roots json.RawMessage `json:"roots"`
		}
		_ = json.Unmarshal(raw, &probe)
		if probe.Roots != nil {
			out[id] = &mcp.ListRootsResult{Roots: []*mcp.Root{}}
			continue
		}
		var r mcp.ElicitResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("tool state: response %q: %w", id, err)
		}
		out[id] = &r
	}
	return out, nil
}

// rawResult is a CallToolResult as the server sent it.
type rawResult struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	ResultType        string          `json:"resultType"`
	InputRequests     map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

// result turns a finished call into the agent's result; when the server
// needs input (2026-07-28) it returns the state to ask with instead.
func (s *Server) result(o outcome) (agent.ToolResult, *toolState, error) {
	raw := o.raw
	if raw == nil {
		// Not seen on the wire (it should always be): go-sdk's typed
		// result is the next best thing.
		s.m.opts.Logger.Warn("mcp tool result not captured; using the decoded one", "mcp_server", s.cfg.Name)
		data, err := json.Marshal(o.res)
		if err != nil {
			return agent.ToolResult{}, nil, err
		}
		raw = data
	}
	var r rawResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return agent.ToolResult{}, nil, fmt.Errorf("the server's result is not a CallToolResult: %w", err)
	}
	if r.ResultType == "task" {
		// A task handle is followed on 2026-07-28 sessions (followTask);
		// an earlier generation has no such result.
		return agent.ToolResult{}, nil, errors.New("the server answered with a task handle, which its protocol version does not have")
	}
	if r.ResultType == "input_required" || (o.res != nil && o.res.NeedsInput()) {
		st := toolState{Kind: kindInputRequired, RequestState: r.RequestState,
			Questions: map[string]json.RawMessage{}, Responses: map[string]json.RawMessage{}}
		for id, ir := range r.InputRequests {
			switch ir.Method {
			case "elicitation/create":
				st.Questions[id] = ir.Params
			case "roots/list":
				st.Responses[id] = json.RawMessage(`{"roots":[]}`)
			default:
				return agent.ToolResult{}, nil, fmt.Errorf("the server asked for %s, which chatd does not provide", ir.Method)
			}
		}
		if err := st.askNext(); err != nil {
			return agent.ToolResult{}, nil, err
		}
		return agent.ToolResult{}, &st, nil
	}
	res := agent.ToolResult{IsError: r.IsError}
	if len(r.Content) > 0 && string(r.Content) != "null" {
		list, err := blocks.DecodeList(r.Content, "content")
		if err != nil {
			// chatd stores only valid blocks; the model hears why there
			// are none.
			return agent.ToolResult{}, nil, fmt.Errorf("the server sent invalid content blocks: %v", err)
		}
		res.Content = list
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		res.StructuredContent = r.StructuredContent
	}
	return res, nil, nil
}

// onElicit receives elicitation/create from a server (2025-era, inside a
// call). An invalid or URL-mode question is declined at once; a valid one
// waits for the user's answer.
func (s *Server) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	s.mu.Lock()
	var c *call
	if x := s.bySess[req.Session]; x != nil {
		c = x.current
	}
	s.mu.Unlock()
	return s.askInCall(ctx, c, req.Params)
}

// askInCall asks the user a question the server sent inside call c (nil
// when it is no call of chatd's: nobody to ask) and returns their answer;
// a question chatd cannot show is declined at once.
func (s *Server) askInCall(ctx context.Context, c *call, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	decline := &mcp.ElicitResult{Action: string(elicit.Decline)}
	if c == nil || params == nil {
		return decline, nil
	}
	p := map[string]any{"message": params.Message}
	if params.RequestedSchema != nil {
		p["requestedSchema"] = params.RequestedSchema
	}
	if params.Mode != "" {
		p["mode"] = params.Mode
	}
	if params.URL != "" || params.ElicitationID != "" {
		p["url"], p["elicitationId"] = params.URL, params.ElicitationID
	}
	if len(params.Meta) > 0 {
		p["_meta"] = params.Meta
	}
	data, err := json.Marshal(p)
	if err != nil {
		return decline, nil
	}
	checked, err := checkQuestion(data)
	if err != nil {
		s.m.opts.Logger.Info("mcp elicitation declined", "mcp_server", s.cfg.Name, "error", err.Error())
		return decline, nil
	}
	r, _ := askedRequest(checked)
	a := &ask{request: r, params: checked, answer: make(chan *mcp.ElicitResult, 1)}
	select {
	case c.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-a.answer:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// tracerName names the spans of MCP requests.
const tracerName = "chatd/internal/mcptools"

// usesRequestMeta reports whether a session speaks 2026-07-28 or later,
// whose requests carry the trace context in their _meta.
func usesRequestMeta(cs *mcp.ClientSession) bool {
	init := cs.InitializeResult()
	return init != nil && init.ProtocolVersion >= "2026-07-28"
}

// metaCarrier lets a propagator write into a request's _meta.
type metaCarrier mcp.Meta

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
