// Package echo is a deterministic processor for tests and benchmarks: it
// repeats the user's message, and a few directives let a client drive any
// block, elicitation, slow stream or failure through the HTTP API.
//
//	plain text                      reply = the user's text and blocks
//	/blocks <JSON array of blocks>  reply text "blocks", blocks = the array
//	/elicit <JSON {message, requestedSchema, _meta?}>  pause with that elicitation
//	/slow <ms> <text>               stream <text> word by word, <ms> apart
//	/fail                           the turn fails
//
// On resume the reply is the compact JSON of the result received:
// {"action":…,"content":…}, content omitted when the result has none.
package echo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
)

// Processor is the echo processor. Its zero value is ready to use.
type Processor struct{}

// New returns the echo processor.
func New() *Processor { return &Processor{} }

// ErrRequested is the error /fail makes the turn fail with.
var ErrRequested = errors.New("echo: failure requested by /fail")

// Describe implements processor.Processor.
func (*Processor) Describe() string {
	return "Deterministic echo for tests: repeats the message; /blocks, /elicit, /slow and /fail drive every feature."
}

// HistoryWindow implements processor.HistoryWindower: echo answers from the
// new message alone, so its turns fetch no history.
func (*Processor) HistoryWindow() int { return 0 }

// Process implements processor.Processor.
func (*Processor) Process(ctx context.Context, in processor.Input, emit processor.Emit) (processor.Output, error) {
	if in.Resume != nil {
		return resumeReply(in.Resume.Result)
	}
	if in.Message == nil {
		return processor.Output{}, errors.New("echo: no message to answer")
	}
	text := in.Message.Text
	directive, arg, _ := strings.Cut(text, " ")
	switch directive {
	case "/blocks":
		return emitted(blocksReply(arg), emit), nil
	case "/elicit":
		return emitted(elicitReply(arg), emit), nil
	case "/slow":
		return slowReply(ctx, arg, emit)
	case "/fail":
		return processor.Output{}, ErrRequested
	}
	if text != "" {
		emit(processor.Delta{Text: text})
	}
	return processor.Output{Text: text, Blocks: in.Message.ContentBlocks}, nil
}

// emitted streams out's whole text as one delta, so a streaming client's
// deltas always add up to the reply text.
func emitted(out processor.Output, emit processor.Emit) processor.Output {
	if out.Text != "" {
		emit(processor.Delta{Text: out.Text})
	}
	return out
}

func blocksReply(arg string) processor.Output {
	list, err := blocks.DecodeList([]byte(arg), "blocks")
	if err != nil {
		return processor.Output{Text: "invalid blocks: " + err.Error()}
	}
	return processor.Output{Text: "blocks", Blocks: list}
}

func elicitReply(arg string) processor.Output {
	req, err := elicit.ParseParams([]byte(arg))
	if err != nil {
		return processor.Output{Text: "invalid elicitation: " + err.Error()}
	}
	return processor.Output{Text: req.Message, Pause: &processor.Pause{Request: req}}
}

func resumeReply(res elicit.Result) (processor.Output, error) {
	reply := struct {
		Action  elicit.Action  `json:"action"`
		Content map[string]any `json:"content,omitempty"`
	}{res.Action, res.Content}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(reply); err != nil {
		return processor.Output{}, err
	}
	return processor.Output{Text: strings.TrimSuffix(buf.String(), "\n")}, nil
}

// slowReply streams text word by word (each delta keeps its trailing space, so
// the deltas concatenate to the text), waiting between words.
func slowReply(ctx context.Context, arg string, emit processor.Emit) (processor.Output, error) {
	msText, text, _ := strings.Cut(arg, " ")
	ms, err := strconv.Atoi(msText)
	if err != nil || ms < 0 {
		return processor.Output{Text: "invalid slow: want /slow <ms> <text>"}, nil
	}
	delay := time.Duration(ms) * time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i, word := range strings.SplitAfter(text, " ") {
		if i > 0 {
			timer.Reset(delay)
			select {
			case <-ctx.Done():
				return processor.Output{}, ctx.Err()
			case <-timer.C:
			}
		}
		if word != "" {
			emit(processor.Delta{Text: word})
		}
	}
	return processor.Output{Text: text}, nil
}
