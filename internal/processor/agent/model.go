package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"chatd/internal/processor"
)

// maxRetries is how often a failed model request is retried (429, 5xx,
// connection errors), with the client library's backoff: about 0.5 s then
// 1 s, or what the model's Retry-After header asks for.
const maxRetries = 2

// chatModel is one OpenAI-compatible Chat Completions endpoint and model.
type chatModel struct {
	completions openai.ChatCompletionService
	model       string
	temperature *float64
}

func newChatModel(cfg Config) chatModel {
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithMaxRetries(maxRetries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	} else {
		opts = append(opts, option.WithHTTPClient(http.DefaultClient))
	}
	// The service alone, not openai.NewClient: the client would also read
	// OPENAI_* variables from the environment, and an agent is configured by
	// chatd's configuration only.
	return chatModel{
		completions: openai.NewChatCompletionService(opts...),
		model:       cfg.Model,
		temperature: cfg.Temperature,
	}
}

// modelReply is one finished model call: the text it streamed and the tool
// calls it made.
type modelReply struct {
	text  string
	calls []toolCall
}

// stream calls the model with the conversation and tools, passing each piece
// of text to onText as it arrives, and returns the whole reply. Errors are
// *processor.Error naming what the model did, or ctx's error.
func (m chatModel) stream(ctx context.Context, messages []openai.ChatCompletionMessageParamUnion,
	tools []openai.ChatCompletionToolUnionParam, onText func(string)) (modelReply, error) {
	req := openai.ChatCompletionNewParams{Model: m.model, Messages: messages, Tools: tools}
	if m.temperature != nil {
		req.Temperature = openai.Float(*m.temperature)
	}
	s := m.completions.NewStreaming(ctx, req)
	defer s.Close()

	var text strings.Builder
	var acc callAccumulator
	finished := false
	for s.Next() {
		chunk := s.Current()
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue // chatd asks for one choice
			}
			if d := choice.Delta.Content; d != "" {
				text.WriteString(d)
				onText(d)
			}
			for _, tc := range choice.Delta.ToolCalls {
				acc.add(tc)
			}
			if choice.FinishReason != "" {
				finished = true
			}
		}
	}
	if err := s.Err(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return modelReply{}, ctxErr
		}
		return modelReply{}, modelFailure(err)
	}
	if !finished {
		// Every compatible server ends a choice with a finish reason; a
		// stream that stops without one was cut off (the model or a proxy
		// died), and its text is not the whole answer.
		return modelReply{}, &processor.Error{Detail: "the model's stream ended before its answer was complete",
			Err: errors.New("stream ended without a finish_reason")}
	}
	return modelReply{text: text.String(), calls: acc.calls()}, nil
}

// callAccumulator assembles streamed tool calls. Chunks carry a call's ID and
// name once and its arguments in pieces, addressed by index. Some servers
// send every call whole with index 0, so a new ID at a used index starts a
// new call.
type callAccumulator struct {
	list    []toolCall
	byIndex map[int64]int
}

func (a *callAccumulator) add(tc openai.ChatCompletionChunkChoiceDeltaToolCall) {
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

// retriable mirrors the statuses the client library retries.
func retriable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}
