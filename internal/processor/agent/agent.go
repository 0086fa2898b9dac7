package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/telemetry"
)

// Defaults of an agent's limits: the agents file documents them.
const (
	DefaultMaxSteps      = 8
	DefaultHistoryWindow = 20
)

// Config is one agent. Constructors of configuration (the environment, the
// agents file) fill in the defaults; New takes the values as they are.
type Config struct {
	// Description is shown by GET /v1/processors.
	Description string
	// BaseURL is the API root the OpenAI client expects, /v1 included
	// (http://127.0.0.1:11434/v1 for Ollama).
	BaseURL string
	// Model is the model name the endpoint knows.
	Model string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// H2C speaks HTTP/2 without TLS to an http:// BaseURL, for a model
	// server or proxy that accepts it with prior knowledge: every turn's
	// stream then shares a few connections instead of holding one each.
	// An https BaseURL negotiates HTTP/2 by itself.
	H2C bool
	// SystemPrompt, when set, is the first message of every model call.
	SystemPrompt string
	// MaxSteps caps the model calls of one turn (at least 1).
	MaxSteps int
	// MaxTokensPerTurn, when positive, caps the input and output tokens of
	// a turn's model calls, summed: once a call makes the sum exceed it, no
	// further call is made and the turn ends stopped. Only calls whose
	// model reports usage count.
	MaxTokensPerTurn int64
	// HistoryWindow is how many recent messages the model sees (the
	// server's CHATD_HISTORY_WINDOW caps it).
	HistoryWindow int
	// Temperature, when set, is sent with every model call.
	Temperature *float64
	// AskUser enables the built-in ask_user tool.
	AskUser bool
	// Confirm and NoConfirm are globs (path.Match syntax) over tool names:
	// a tool matched by Confirm, or marked Destructive, asks the user
	// before it runs, unless NoConfirm matches it.
	Confirm, NoConfirm []string
	// Tools are the tools the model may call besides ask_user.
	Tools []ToolSource
	// HTTPClient makes the model requests; nil uses a client of its own that
	// keeps connections to the model open for reuse.
	HTTPClient *http.Client
	// Inputs are the kinds of a user message's blocks the model is given
	// as themselves (InputImage, InputAudio, InputFile); the others, and
	// all of them when Inputs is empty, are text summaries.
	Inputs []string
	// TextFileBytes bounds the text of one text file or text resource
	// given to the model (DefaultTextFileBytes when zero).
	TextFileBytes int
	// Files reads the stored files a message links; nil gives the model
	// their summaries only.
	Files FileReader
}

// Agent is a processor backed by an OpenAI-compatible Chat Completions
// model. It keeps no per-thread state — a paused turn's state travels in the
// Pause — so one value serves every thread and is safe for concurrent use.
type Agent struct {
	cfg Config
	// toolset is built once when every tool source is a fixed list.
	toolset *toolset
	model   chatModel
	system  []byte // the system prompt's message, encoded; nil without one
	history *historyCache
	inputs  inputs
}

// New checks cfg and returns the agent.
func New(cfg Config) (*Agent, error) {
	var errs []error
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("base_url %q: want an http or https URL such as http://127.0.0.1:11434/v1", cfg.BaseURL))
	} else if cfg.H2C && u.Scheme != "http" {
		errs = append(errs, errors.New("h2c: only for an http:// base_url (https negotiates HTTP/2 by itself)"))
	}
	if strings.TrimSpace(cfg.Model) == "" {
		errs = append(errs, errors.New("model: required"))
	}
	if cfg.MaxSteps < 1 {
		errs = append(errs, fmt.Errorf("max_steps %d: must be at least 1", cfg.MaxSteps))
	}
	if cfg.MaxTokensPerTurn < 0 {
		errs = append(errs, fmt.Errorf("max_tokens_per_turn %d: must not be negative", cfg.MaxTokensPerTurn))
	}
	if cfg.HistoryWindow < 0 {
		errs = append(errs, fmt.Errorf("history_window %d: must not be negative", cfg.HistoryWindow))
	}
	if err := CheckInputs(cfg.Inputs); err != nil {
		errs = append(errs, fmt.Errorf("inputs: %w", err))
	}
	for _, g := range append(append([]string(nil), cfg.Confirm...), cfg.NoConfirm...) {
		if _, err := path.Match(g, ""); err != nil {
			errs = append(errs, fmt.Errorf("tool glob %q: %v", g, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, model: newChatModel(cfg), history: newHistoryCache(), inputs: newInputs(cfg)}
	if fixedTools(cfg.Tools) {
		ts, err := a.tools(context.Background())
		if err != nil {
			return nil, err
		}
		a.toolset = ts
	}
	if cfg.SystemPrompt != "" {
		system := message{Role: "system", Content: cfg.SystemPrompt}
		a.system = system.encode()
	}
	return a, nil
}

func fixedTools(sources []ToolSource) bool {
	for _, src := range sources {
		if _, ok := src.(Tools); !ok {
			return false
		}
	}
	return true
}

// Describe implements processor.Processor.
func (a *Agent) Describe() string {
	if a.cfg.Description != "" {
		return a.cfg.Description
	}
	return "An AI assistant (model " + a.cfg.Model + ")"
}

// HistoryWindow implements processor.HistoryWindower.
func (a *Agent) HistoryWindow() int { return a.cfg.HistoryWindow }

// Process implements processor.Processor: it runs the tool loop until the
// model answers without calling a tool, a call pauses the turn, or the turn
// has made MaxSteps model calls. A stopped turn stops spending at once: the
// model's request is closed, a running tool call cancelled, and the reply
// is what the turn had written, with its tool calls recorded.
func (a *Agent) Process(ctx context.Context, in processor.Input, emit processor.Emit) (processor.Output, error) {
	t, err := a.newTurn(ctx, emit)
	if err != nil {
		return processor.Output{}, err
	}
	out, err := t.process(ctx, in)
	if err != nil && processor.Stopped(ctx) {
		return t.output(), nil
	}
	return out, err
}

func (t *turn) process(ctx context.Context, in processor.Input) (processor.Output, error) {
	// begin's frame, with what it inlines, is over a kilobyte: returning
	// before the loop keeps it off the stack while the model streams.
	if out, err := t.begin(ctx, in); out != nil || err != nil {
		return deref(out), err
	}
	return t.loop(ctx)
}

// begin sets up the conversation the model sees: the history, and the
// user's message or the paused exchange. A non-nil Output ends the turn
// there (a resumed tool that pauses again, say).
func (t *turn) begin(ctx context.Context, in processor.Input) (*processor.Output, error) {
	a := t.a
	t.threadID, t.principal = in.ThreadID, in.Principal
	history, err := a.history.entries(in.History)
	if err != nil {
		return nil, fmt.Errorf("agent: history: %w", err)
	}
	switch {
	case in.Resume != nil:
		st, err := decodeState(in.Resume.State)
		if err != nil {
			return nil, &processor.Error{Detail: "the agent could not read the state it saved when it paused", Err: err}
		}
		t.conv = historyMessages(before(history, st.Since))
		t.start, t.since = len(t.conv), st.Since
		t.conv = append(t.conv, st.Messages...)
		if out, err := t.resume(ctx, st, in.Resume); out != nil || err != nil {
			return out, err
		}
	case in.Message != nil:
		t.conv = historyMessages(history)
		t.start, t.since = len(t.conv), in.Message.ID
		t.conv = append(t.conv, a.inputs.userMessage(ctx, in))
	default:
		return nil, errors.New("agent: no message to answer")
	}
	return nil, nil
}

// before returns the messages older than the one with ID since. Message IDs
// are UUIDv7, ordered by time, so this holds even when that message has left
// the window.
func before(history []historyEntry, since string) []historyEntry {
	for i, m := range history {
		if m.id >= since {
			return history[:i]
		}
	}
	return history
}

func deref(out *processor.Output) processor.Output {
	if out == nil {
		return processor.Output{}
	}
	return *out
}

// turn is one run of the agent: the conversation the model sees and the
// reply being built.
type turn struct {
	a    *Agent
	emit processor.Emit
	// threadID and principal are the turn's, for the tools it calls.
	threadID, principal string
	tools               map[string]Tool
	defs                json.RawMessage // the request's tools

	conv  []message
	start int    // index in conv of the exchange's first message (the pause state keeps conv[start:])
	since string // ID of the user message that began the exchange

	text      strings.Builder
	paragraph bool // the next text starts a new paragraph
	blocks    []blocks.ContentBlock
	records   []any // drupal.org/ai.tool_call entries
	structure any   // the last tool's structured content

	// usage sums the turn's model calls that reported it; nil while none
	// has.
	usage *tokenUsage
	// capped is set when the turn's tokens exceeded MaxTokensPerTurn.
	capped bool
}

// The statuses of a drupal.org/ai.tool_call entry (and the states of a
// drupal.org/ai.status_item: running, done, failed).
const (
	statusRunning       = "running"
	statusDone          = "done"
	statusFailed        = "failed"
	statusDeclined      = "declined"
	statusCancelled     = "cancelled"
	statusSkipped       = "skipped"
	statusInputRequired = "input_required"
)

func (a *Agent) newTurn(ctx context.Context, emit processor.Emit) (*turn, error) {
	t := &turn{a: a, emit: emit}
	if a.toolset != nil {
		t.tools, t.defs = a.toolset.byName, a.toolset.wire
		return t, nil
	}
	ts, err := a.tools(ctx)
	if err != nil {
		return nil, err
	}
	t.tools, t.defs = ts.byName, ts.wire
	return t, nil
}

// toolset is the tools of a turn: by name, and as the request's tools.
type toolset struct {
	byName map[string]Tool
	wire   json.RawMessage
}

// tools lists the tools of every source. The errors of a source are the
// turn's; a misnamed or duplicate tool is a fault of the configuration.
func (a *Agent) tools(ctx context.Context) (*toolset, error) {
	ts := &toolset{byName: map[string]Tool{}}
	var defs []ToolDefinition
	if a.cfg.AskUser {
		defs = append(defs, askUserDefinition)
	}
	for _, src := range a.cfg.Tools {
		list, err := src.Tools(ctx)
		if err != nil {
			return nil, &processor.Error{Detail: "the agent's tools are unavailable", Err: err}
		}
		for _, tool := range list {
			d := tool.Definition()
			if err := checkToolName(d.Name); err != nil {
				return nil, fmt.Errorf("agent: %w", err)
			}
			if _, dup := ts.byName[d.Name]; dup || (a.cfg.AskUser && d.Name == askUserName) {
				return nil, fmt.Errorf("agent: two tools are named %q", d.Name)
			}
			ts.byName[d.Name] = tool
			defs = append(defs, d)
		}
	}
	var err error
	if ts.wire, err = wireTools(defs); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return ts, nil
}

// loop calls the model and runs the tools it asks for until it answers
// without a tool call, a call pauses or ends the turn, or the step limit is
// reached.
func (t *turn) loop(ctx context.Context) (processor.Output, error) {
	for step := 1; ; step++ {
		t.paragraph = true
		reply, err := t.a.model.stream(ctx, t.a.system, t.conv, t.defs, t.write)
		if err != nil {
			return processor.Output{}, err
		}
		t.addUsage(reply.usage)
		if t.overTokens() {
			for _, c := range reply.calls {
				t.record(c, statusSkipped, "the turn reached its token limit")
			}
			if len(reply.calls) > 0 {
				t.say(fmt.Sprintf("(I stopped here: this turn reached its limit of %d tokens. Ask me to continue.)", t.a.cfg.MaxTokensPerTurn))
			}
			t.capped = true
			return t.output(), nil
		}
		if len(reply.calls) == 0 {
			return t.output(), nil
		}
		t.conv = append(t.conv, message{Role: roleAssistant, Content: reply.text, ToolCalls: reply.calls})
		if step >= t.a.cfg.MaxSteps {
			// The results could reach the model only through another call,
			// which the limit forbids, so the calls are not run.
			for _, c := range reply.calls {
				t.record(c, statusSkipped, "the turn reached its limit of model calls")
			}
			t.say(fmt.Sprintf("(I stopped here: this turn reached its limit of %d steps. Ask me to continue.)", t.a.cfg.MaxSteps))
			return t.output(), nil
		}
		if out, err := t.runCalls(ctx, reply.calls); out != nil || err != nil {
			return deref(out), err
		}
	}
}

// write adds text to the reply and streams it; text after a tool call or a
// note starts a new paragraph.
func (t *turn) write(s string) {
	if s == "" {
		return
	}
	if t.paragraph && t.text.Len() > 0 {
		s = "\n\n" + s
	}
	t.paragraph = false
	t.text.WriteString(s)
	t.emit(processor.Delta{Text: s})
}

// say writes a paragraph of chatd's own text (a question, a note).
func (t *turn) say(s string) {
	t.paragraph = true
	t.write(s)
}

// addUsage adds a model call's tokens to the turn's.
func (t *turn) addUsage(u *tokenUsage) {
	if u == nil {
		return
	}
	if t.usage == nil {
		t.usage = &tokenUsage{}
	}
	t.usage.input += u.input
	t.usage.output += u.output
}

// overTokens reports whether the turn has spent more than its token limit.
func (t *turn) overTokens() bool {
	limit := t.a.cfg.MaxTokensPerTurn
	return limit > 0 && t.usage != nil && t.usage.input+t.usage.output > limit
}

func (t *turn) output() processor.Output {
	out := processor.Output{Text: t.text.String(), Blocks: t.blocks, Stopped: t.capped}
	if t.usage != nil {
		out.Usage = &processor.Usage{Model: t.a.cfg.Model, InputTokens: t.usage.input, OutputTokens: t.usage.output}
	}
	if len(t.records) > 0 || t.structure != nil {
		out.Meta = map[string]any{}
		if len(t.records) > 0 {
			out.Meta[blocks.MetaToolCall] = t.records
		}
		if t.structure != nil {
			out.Meta[blocks.MetaStructuredContent] = t.structure
		}
	}
	return out
}

// runCalls runs the calls of one model reply in order. A non-nil Output
// ends the turn there (a pause or a cancel).
func (t *turn) runCalls(ctx context.Context, calls []toolCall) (*processor.Output, error) {
	for i, c := range calls {
		if err := ctx.Err(); err != nil {
			if processor.Stopped(ctx) {
				for _, q := range calls[i:] {
					t.record(q, statusSkipped, "the user stopped the turn")
				}
			}
			return nil, err
		}
		if out, err := t.runCall(ctx, c, calls[i+1:]); out != nil || err != nil {
			return out, err
		}
	}
	return nil, nil
}

func (t *turn) runCall(ctx context.Context, c toolCall, queue []toolCall) (*processor.Output, error) {
	ctx, span := toolSpan(ctx, c)
	if span.IsRecording() {
		defer span.End()
	}
	args, err := arguments(c.Arguments)
	if err != nil {
		t.toolResult(c, "error: the arguments are not a JSON object: "+err.Error(), statusFailed, err.Error())
		return nil, nil
	}
	if c.Name == askUserName && t.a.cfg.AskUser {
		req, err := askUserRequest(args)
		if err != nil {
			t.toolResult(c, "error: invalid ask_user request, nothing was asked. Fix these fields and call ask_user again: "+fieldErrors(err),
				statusFailed, err.Error())
			return nil, nil
		}
		return t.pause(pendingCall{Kind: pendingAskUser, Call: c}, queue, req)
	}
	tool, ok := t.tools[c.Name]
	if !ok {
		t.toolResult(c, fmt.Sprintf("error: there is no tool named %q", c.Name), statusFailed, "no such tool")
		return nil, nil
	}
	if t.a.needsConfirm(tool.Definition()) {
		req, err := confirmRequest(c.Name, args)
		if err != nil {
			return nil, fmt.Errorf("agent: confirm request: %w", err)
		}
		return t.pause(pendingCall{Kind: pendingConfirm, Call: c}, queue, req)
	}
	return t.execute(ctx, tool, c, args, nil, queue)
}

// execute runs a tool and records its result; a tool that pauses pauses the
// turn.
func (t *turn) execute(ctx context.Context, tool Tool, c toolCall, args json.RawMessage, resume *ToolResume, queue []toolCall) (*processor.Output, error) {
	t.status(c, statusRunning, "Running "+c.Name)
	report := func(st ToolStatus) { t.progress(c, st) }
	res, err := tool.Call(ctx, ToolCall{ID: c.ID, Name: c.Name, Arguments: args, Resume: resume, Report: report,
		ThreadID: t.threadID, Principal: t.principal})
	if ctxErr := ctx.Err(); ctxErr != nil {
		if processor.Stopped(ctx) {
			t.record(c, statusCancelled, "the user stopped the turn")
			for _, q := range queue {
				t.record(q, statusSkipped, "the user stopped the turn")
			}
		}
		return nil, ctxErr
	}
	if err != nil {
		t.status(c, statusFailed, c.Name+" failed")
		t.toolResult(c, "error: "+err.Error(), statusFailed, err.Error())
		return nil, nil
	}
	if p := res.Pause; p != nil {
		if p.Request == nil {
			return nil, fmt.Errorf("agent: tool %s paused without a request", c.Name)
		}
		t.status(c, statusRunning, c.Name+" needs your answer")
		return t.pause(pendingCall{Kind: pendingTool, Call: c, ToolState: p.State}, queue, p.Request)
	}
	t.blocks = append(t.blocks, res.Content...)
	if len(res.StructuredContent) > 0 {
		if v, err := decodeJSON(res.StructuredContent); err == nil {
			t.structure = v
		}
	}
	text := summarizeBlocks(res.Content)
	if text == "" && len(res.StructuredContent) > 0 {
		text = string(res.StructuredContent)
	}
	if text == "" {
		text = "(the tool returned nothing)"
	}
	if res.IsError {
		t.status(c, statusFailed, c.Name+" failed")
		t.toolResult(c, "error: "+text, statusFailed, "the tool reported an error")
		return nil, nil
	}
	t.status(c, statusDone, c.Name+" done")
	t.toolResult(c, text, statusDone, "")
	return nil, nil
}

// status streams a drupal.org/ai.status_item for a tool call; later items of
// the same call replace earlier ones (same id).
func (t *turn) status(c toolCall, state, label string) {
	t.emit(processor.Delta{Meta: map[string]any{blocks.MetaStatusItem: map[string]any{
		"id": c.ID, "label": label, "state": state,
	}}})
}

// progress streams a running call's status item with what the tool
// reported: progress, total and message, each when given.
func (t *turn) progress(c toolCall, st ToolStatus) {
	item := map[string]any{"id": c.ID, "label": "Running " + c.Name, "state": statusRunning}
	if st.Progress != "" {
		item["progress"] = st.Progress
	}
	if st.Total != "" {
		item["total"] = st.Total
	}
	if st.Message != "" {
		item["message"] = st.Message
	}
	if st.Status != "" {
		item["status"] = st.Status
	}
	if st.StatusMessage != "" {
		item["statusMessage"] = st.StatusMessage
	}
	t.emit(processor.Delta{Meta: map[string]any{blocks.MetaStatusItem: item}})
}

// toolResult gives the model a call's result and records the call.
func (t *turn) toolResult(c toolCall, content, status, reason string) {
	t.conv = append(t.conv, message{Role: roleTool, ToolCallID: c.ID, Content: content})
	t.record(c, status, reason)
}

// record adds a drupal.org/ai.tool_call entry: {id, name, arguments,
// status, error?}.
func (t *turn) record(c toolCall, status, reason string) {
	entry := map[string]any{"id": c.ID, "name": c.Name, "status": status}
	if v, err := decodeJSON([]byte(c.Arguments)); err == nil && v != nil {
		entry["arguments"] = v
	} else {
		entry["arguments"] = map[string]any{}
	}
	if reason != "" && status != statusDone {
		entry["error"] = reason
	}
	t.records = append(t.records, entry)
}

// pause ends the turn asking req; the state holds the exchange so far.
func (t *turn) pause(p pendingCall, queue []toolCall, req *elicit.Request) (*processor.Output, error) {
	state, err := pauseState{Since: t.since, Messages: t.conv[t.start:], Pending: p, Queue: queue}.encode()
	if err != nil {
		return nil, fmt.Errorf("agent: pause state: %w", err)
	}
	t.record(p.Call, statusInputRequired, "")
	if req.IsURL() {
		// Block-unaware clients see where the user is asked to go.
		t.say(req.Message + "\n\n" + req.URL)
	} else {
		t.say(req.Message)
	}
	out := t.output()
	out.Pause = &processor.Pause{Request: req, State: state}
	return &out, nil
}

// resume settles the call the turn paused on with the user's answer, then
// runs the rest of that model reply's calls.
func (t *turn) resume(ctx context.Context, st pauseState, r *processor.Resume) (*processor.Output, error) {
	out, err := t.settle(ctx, st, r)
	if out != nil || err != nil {
		return out, err
	}
	return t.runCalls(ctx, st.Queue)
}

// toolSpan starts the span of one tool call, whatever becomes of it.
// The caller ends it when it records.
func toolSpan(ctx context.Context, c toolCall) (context.Context, trace.Span) {
	ctx, span := telemetry.StartChild(ctx, tracerName, "execute_tool "+c.Name, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", c.Name), attribute.String("gen_ai.tool.call.id", c.ID))
	}
	return ctx, span
}

// settle settles the call the turn paused on with the user's answer.
func (t *turn) settle(ctx context.Context, st pauseState, r *processor.Resume) (*processor.Output, error) {
	c := st.Pending.Call
	ctx, span := toolSpan(ctx, c)
	if span.IsRecording() {
		defer span.End()
	}
	args, _ := arguments(c.Arguments) // checked before the pause
	switch st.Pending.Kind {
	case pendingAskUser:
		answer, err := json.Marshal(r.Result)
		if err != nil {
			return nil, fmt.Errorf("agent: answer: %w", err)
		}
		t.toolResult(c, string(answer), answerStatus[r.Result.Action], "")
	case pendingConfirm:
		switch r.Result.Action {
		case elicit.Accept:
			tool, ok := t.tools[c.Name]
			if !ok {
				t.toolResult(c, fmt.Sprintf("error: the tool %q is no longer available", c.Name), statusFailed, "no such tool")
				break
			}
			if out, err := t.execute(ctx, tool, c, args, nil, st.Queue); out != nil || err != nil {
				return out, err
			}
		case elicit.Decline:
			t.toolResult(c, "The user declined: the tool was not run.", statusDeclined, "the user declined")
		default:
			// Cancel dismisses the whole task: no result, no further call.
			t.record(c, statusCancelled, "the user cancelled")
			for _, q := range st.Queue {
				t.record(q, statusSkipped, "the user cancelled")
			}
			t.say(fmt.Sprintf("Cancelled: %s was not run.", c.Name))
			out := t.output()
			return &out, nil
		}
	case pendingTool:
		tool, ok := t.tools[c.Name]
		if !ok {
			t.toolResult(c, fmt.Sprintf("error: the tool %q is no longer available", c.Name), statusFailed, "no such tool")
			break
		}
		resume := &ToolResume{Request: r.Request, Result: r.Result, State: st.Pending.ToolState}
		if out, err := t.execute(ctx, tool, c, args, resume, st.Queue); out != nil || err != nil {
			return out, err
		}
	}
	return nil, nil
}

var answerStatus = map[elicit.Action]string{
	elicit.Accept: statusDone, elicit.Decline: statusDeclined, elicit.Cancel: statusCancelled,
}

// needsConfirm reports whether a tool asks the user before it runs.
func (a *Agent) needsConfirm(d ToolDefinition) bool {
	if matchAny(a.cfg.NoConfirm, d.Name) {
		return false
	}
	return d.Destructive || matchAny(a.cfg.Confirm, d.Name)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// maxArgsShown bounds the arguments a confirm shows, well inside the
// elicitation message limit.
const maxArgsShown = 1000

// confirmSchema asks nothing but the question: accept runs the tool.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{}}`)

func confirmRequest(name string, args json.RawMessage) (*elicit.Request, error) {
	shown := string(args)
	if utf8.RuneCountInString(shown) > maxArgsShown {
		shown = string([]rune(shown)[:maxArgsShown]) + "…"
	}
	return elicit.NewRequest(fmt.Sprintf("Allow the assistant to run %s with %s?", name, shown), confirmSchema, nil)
}

// arguments checks that a call's arguments are a JSON object and returns
// them compacted; an empty string (some models send it for no arguments) is
// {}.
func arguments(s string) (json.RawMessage, error) {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, err
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, errors.New("want a JSON object")
	}
	return buf.Bytes(), nil
}

// decodeJSON decodes a value keeping numbers as json.Number, as chatd keeps
// every free-form value it stores.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// fieldErrors renders a validation error for the model as JSON
// [{field, detail}], the shape chatd's API uses.
func fieldErrors(err error) string {
	var verr *blocks.ValidationError
	if errors.As(err, &verr) {
		if data, merr := json.Marshal(verr.Errors); merr == nil {
			return string(data)
		}
	}
	return err.Error()
}
