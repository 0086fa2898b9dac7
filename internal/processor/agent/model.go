package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	segjson "github.com/segmentio/encoding/json"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"chatd/internal/processor"
	"chatd/internal/telemetry"
)

// maxRetries is how often a failed model request is retried (429, 5xx,
// connection errors), with the client library's backoff: about 0.5 s then
// 1 s, or what the model's Retry-After header asks for.
const maxRetries = 2

// chatModel is one OpenAI-compatible Chat Completions endpoint and model.
//
// The client library does the HTTP: base URL, credentials, retries with
// backoff, error responses, the SSE stream. chatd encodes the request and
// decodes the chunks itself, into the few fields it reads: the library's
// reflection-based codecs for its complete types cost more than an entire
// echo turn (docs/performance.md), and chatd's conversation is a small fixed
// shape.
//
// Its methods take a pointer: openai.Client is some 3 KiB, and a copy in
// the frame of every call would stay on the stack of each turn's
// goroutine for as long as its model streams.
type chatModel struct {
	client openai.Client
	// head is the request's JSON up to its messages: model, stream,
	// stream_options and temperature never change.
	head  []byte
	model string
}

func newChatModel(cfg Config) chatModel {
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithMaxRetries(maxRetries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = defaultHTTPClient(cfg.H2C)
	}
	opts = append(opts, option.WithHTTPClient(httpClient), option.WithMiddleware(injectTrace))
	// A Client value, not openai.NewClient: NewClient would also read
	// OPENAI_* variables from the environment, and an agent is configured
	// by chatd's configuration only.
	// include_usage asks for a last chunk with the call's token counts.
	type streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	head := struct {
		Model         string        `json:"model"`
		Stream        bool          `json:"stream"`
		StreamOptions streamOptions `json:"stream_options"`
		Temperature   *float64      `json:"temperature,omitempty"`
	}{cfg.Model, true, streamOptions{true}, cfg.Temperature}
	// Strings and a number always encode.
	data, _ := json.Marshal(head)
	return chatModel{client: openai.Client{Options: opts}, head: data[:len(data)-1], model: cfg.Model}
}

// injectTrace sends the model call's trace context (traceparent) with the
// request, so a model server that traces continues chatd's trace.
func injectTrace(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	return next(req)
}

// request encodes the Chat Completions request: {model, stream,
// temperature?, messages, tools?}, the system prompt first.
func (m *chatModel) request(system []byte, conv []message, tools json.RawMessage) []byte {
	n := len(m.head) + len(system) + len(tools) + 32
	for i := range conv {
		n += len(conv[i].encode()) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, m.head...)
	buf = append(buf, `,"messages":[`...)
	sep := false
	if system != nil {
		buf, sep = append(buf, system...), true
	}
	for i := range conv {
		if sep {
			buf = append(buf, ',')
		}
		buf, sep = append(buf, conv[i].encode()...), true
	}
	buf = append(buf, ']')
	if tools != nil {
		buf = append(buf, `,"tools":`...)
		buf = append(buf, tools...)
	}
	return append(buf, '}')
}

// maxIdleConns is how many idle connections to its model an agent keeps:
// over HTTP/1.1 every running turn holds one while the model streams, and
// the standard transport's default of 2 would make the third concurrent
// turn and every one after it open a new connection (a TLS handshake, for
// a hosted model).
const maxIdleConns = 64

// connBuffer is the size of each of the read and write buffers an HTTP/1.1
// model connection keeps for its life (the transport's default is 4 KiB
// each). Such a connection is held by one turn while its model streams, so
// with thousands of streams open these buffers are much of what a stream
// costs; the request is written once, mostly past the buffer, and a
// streamed answer arrives in chunks of a few hundred bytes.
const connBuffer = 1 << 10

// defaultHTTPClient is the model client of an agent without one of its
// own. An https model gets HTTP/2 where its server offers it (ALPN), and
// with h2c an http:// one gets it unasked: the turns then share
// connections, each stream costing neither a connection's descriptor nor
// its two goroutines and buffers.
func defaultHTTPClient(h2c bool) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = maxIdleConns
	t.MaxIdleConnsPerHost = maxIdleConns
	t.ReadBufferSize, t.WriteBufferSize = connBuffer, connBuffer
	if h2c {
		// Without HTTP1 in the set, http:// URLs go over HTTP/2 with prior
		// knowledge.
		t.Protocols = new(http.Protocols)
		t.Protocols.SetUnencryptedHTTP2(true)
	}
	// No client timeout: a streamed answer lasts as long as it lasts, and
	// the turn's context bounds it.
	return &http.Client{Transport: t}
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is left out only for an assistant message that only calls
	// tools.
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// wireChunk is what chatd reads of a chat.completion.chunk.
type wireChunk struct {
	// Error is what a server that fails mid-stream sends instead of choices.
	Error   json.RawMessage `json:"error"`
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			Content   string          `json:"content"`
			ToolCalls []wireCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	// Usage is on the last chunk when the request asked for it, and on no
	// chunk from a server that does not report usage.
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// wireCallDelta is a piece of a streamed tool call.
type wireCallDelta struct {
	Index    int64        `json:"index"`
	ID       string       `json:"id"`
	Function wireFunction `json:"function"`
}

// modelReply is one finished model call: the text it streamed and the tool
// calls it made.
type modelReply struct {
	text  string
	calls []toolCall
	// finishReasons are the choice's finish reasons (one, from every
	// server chatd knows).
	finishReasons []string
	// usage is the call's token counts; nil when the model reported none.
	usage *tokenUsage
}

// tokenUsage is the tokens of one model call.
type tokenUsage struct{ input, output int64 }

// stream calls the model with the system prompt (its message's JSON, or
// nil), the conversation and tools (the request's tools array, or nil), passing each piece of text to onText as it
// arrives, and returns the whole reply. Errors are *processor.Error naming
// what the model did, or ctx's error.
func (m *chatModel) stream(ctx context.Context, system []byte, conv []message, tools json.RawMessage,
	onText func(string)) (reply modelReply, err error) {
	ctx, span := telemetry.StartChild(ctx, tracerName, "chat "+m.model, trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(operationChat, providerOpenAI, attribute.String("gen_ai.request.model", m.model))
		defer func() { endModelSpan(span, reply, err) }()
	}
	events, err := m.open(ctx, system, conv, tools)
	if err != nil {
		return modelReply{}, err
	}
	defer events.Close()
	var r replyReader
	for events.Next() {
		event := events.Event()
		if bytes.HasPrefix(event.Data, []byte("[DONE]")) {
			break
		}
		if err := r.read(event, onText); err != nil {
			return modelReply{}, err
		}
	}
	if err := events.Err(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return modelReply{}, ctxErr
		}
		return modelReply{}, modelFailure(err)
	}
	if !r.finished {
		// Every compatible server ends a choice with a finish reason; a
		// stream that stops without one was cut off (the model or a proxy
		// died), and its text is not the whole answer.
		return modelReply{}, &processor.Error{Detail: "the model's stream ended before its answer was complete",
			Err: errors.New("stream ended without a finish_reason")}
	}
	return modelReply{text: r.text.String(), calls: r.calls.calls(), usage: r.usage, finishReasons: r.finishReasons}, nil
}

// tracerName names the agent's spans.
const tracerName = "chatd/internal/processor/agent"

// The GenAI attributes every model span has: chatd speaks the OpenAI Chat
// Completions API, whichever server answers it.
var (
	operationChat  = attribute.String("gen_ai.operation.name", "chat")
	providerOpenAI = attribute.String("gen_ai.provider.name", "openai")
)

// endModelSpan records a model call's outcome on its span.
func endModelSpan(span trace.Span, reply modelReply, err error) {
	defer span.End()
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "model call failed")
		return
	}
	if reply.usage != nil {
		span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", reply.usage.input),
			attribute.Int64("gen_ai.usage.output_tokens", reply.usage.output))
	}
	span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", reply.finishReasons))
}

// open sends the model its request and returns the stream of its answer.
func (m *chatModel) open(ctx context.Context, system []byte, conv []message, tools json.RawMessage) (ssestream.Decoder, error) {
	var raw *http.Response
	err := m.client.Post(ctx, "chat/completions", json.RawMessage(m.request(system, conv, tools)), &raw)
	var events ssestream.Decoder
	if err == nil {
		if raw == nil || raw.Body == nil {
			err = errors.New("the model answered with no body")
		} else {
			events = newSSEDecoder(raw.Body)
		}
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, modelFailure(err)
	}
	return events, nil
}

// replyReader gathers a model's streamed answer, chunk by chunk.
type replyReader struct {
	text     strings.Builder
	calls    callAccumulator
	finished bool
	usage    *tokenUsage
	// finishReasons are the reasons the choice ended with, in order.
	finishReasons []string
}

// read takes one chunk of the stream, handing its text to onText.
func (r *replyReader) read(event ssestream.Event, onText func(string)) error {
	// The chunks are decoded here rather than by the client library's
	// stream, which uses encoding/json: segmentio's decoder reads the same
	// JSON into the same types, with encoding/json's errors, in about a
	// third of the time, and chunks are most of what an agent turn decodes.
	var chunk wireChunk
	if err := segjson.Unmarshal(event.Data, &chunk); err != nil {
		return modelFailure(err)
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		return modelFailure(&ssestream.StreamError{Event: event,
			Message: "received error while streaming: " + errorText(chunk.Error)})
	}
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue // chatd asks for one choice
		}
		if d := choice.Delta.Content; d != "" {
			r.text.WriteString(d)
			onText(d)
		}
		for _, tc := range choice.Delta.ToolCalls {
			r.calls.add(tc)
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			r.finished = true
			r.finishReasons = append(r.finishReasons, *choice.FinishReason)
		}
	}
	if u := chunk.Usage; u != nil {
		r.usage = &tokenUsage{input: u.PromptTokens, output: u.CompletionTokens}
	}
	return nil
}

// callAccumulator assembles streamed tool calls. Chunks carry a call's ID and
// name once and its arguments in pieces, addressed by index. Some servers
// send every call whole with index 0, so a new ID at a used index starts a
// new call.
type callAccumulator struct {
	list    []toolCall
	byIndex map[int64]int
}

func (a *callAccumulator) add(tc wireCallDelta) {
	if a.byIndex == nil {
		a.byIndex = map[int64]int{}
	}
	i, ok := a.byIndex[tc.Index]
	if !ok || (tc.ID != "" && a.list[i].ID != "" && a.list[i].ID != tc.ID) {
		a.list = append(a.list, toolCall{})
		i = len(a.list) - 1
		a.byIndex[tc.Index] = i
	}
	c := &a.list[i]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	c.Name += tc.Function.Name
	c.Arguments += tc.Function.Arguments
}

func (a *callAccumulator) calls() []toolCall {
	for i := range a.list {
		if a.list[i].ID == "" {
			// The tool message must name the call it answers.
			a.list[i].ID = fmt.Sprintf("call_%d", i)
		}
	}
	return a.list
}

// modelFailure turns a failed model call into the error the turn fails with:
// its detail says what the model did — its HTTP status, a broken or
// malformed stream, no answer at all — without the model's address or its
// error text, which the log gets.
func modelFailure(err error) error {
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &apiErr):
		status := fmt.Sprintf("%d %s", apiErr.StatusCode, http.StatusText(apiErr.StatusCode))
		detail := "the model answered " + status
		if retriable(apiErr.StatusCode) {
			detail += fmt.Sprintf(" (%d attempts)", maxRetries+1)
		}
		return &processor.Error{Detail: detail, Err: fmt.Errorf("%w: %s", err, apiErr.Message)}
	case errors.As(err, &streamErr):
		return &processor.Error{Detail: "the model reported an error while streaming", Err: err}
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		return &processor.Error{Detail: "the model sent a malformed stream", Err: err}
	}
	return &processor.Error{Detail: "the model could not be reached or its stream broke", Err: err}
}

// errorText is a streamed error as text: a string's value, else its JSON.
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// retriable mirrors the statuses the client library retries.
func retriable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}
