package aisdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/protocol"
)

// Request is what a POST /v1/ai-sdk/chat asks for: a turn on a user's
// message, or the answer to the thread's pending elicitation.
type Request struct {
	// ThreadID is the body's id: the chat's ID is a chatd thread ID.
	ThreadID string
	// Text and Blocks are the user's message (when Answer is nil).
	Text   string
	Blocks []blocks.ContentBlock
	// Answer is set when the last message holds the output of the
	// elicitation tool.
	Answer *Answer
}

// Answer is an elicitation's answer, given as the output of the client-side
// tool "elicitation".
type Answer struct {
	ElicitationID string
	Result        elicit.Result
	// Meta is the output's _meta, kept on the recorded answer.
	Meta map[string]any
	// MessageID is the UI message the answer continues: the request's
	// messageId, else the ID of the message holding the tool output.
	MessageID string
}

// ToolName is the client-side tool a pause is called as.
const ToolName = "elicitation"

// chatRequest is the body DefaultChatTransport sends. Other members (the
// transport's body option) are the application's and are ignored.
type chatRequest struct {
	ID        *string           `json:"id"`
	Messages  []json.RawMessage `json:"messages"`
	Trigger   string            `json:"trigger"`
	MessageID *string           `json:"messageId"`
}

type uiMessage struct {
	ID    string            `json:"id"`
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

type uiPart struct {
	Type string `json:"type"`
	// text
	Text *string `json:"text"`
	// file
	MediaType string `json:"mediaType"`
	URL       string `json:"url"`
	// data-content-block
	Data json.RawMessage `json:"data"`
	// tool-elicitation and dynamic-tool
	ToolName   string          `json:"toolName"`
	ToolCallID string          `json:"toolCallId"`
	State      string          `json:"state"`
	Output     json.RawMessage `json:"output"`
}

type toolOutput struct {
	Action  elicit.Action  `json:"action"`
	Content map[string]any `json:"content"`
	Meta    map[string]any `json:"_meta"`
}

// DecodeRequest reads a chat request. It returns a *protocol.InputError for
// a body it cannot use and a *blocks.ValidationError, with paths, for
// attachments that are not valid content blocks. Only the last message is
// read: chatd's history, not the client's copy, is the conversation.
func DecodeRequest(body []byte) (Request, error) {
	var req chatRequest
	if err := decode(body, &req, false); err != nil {
		return Request{}, protocol.Inputf("malformed chat request: %s", err)
	}
	if req.ID == nil || *req.ID == "" {
		return Request{}, protocol.Inputf("id: required (the chatd thread ID)")
	}
	switch req.Trigger {
	case "", "submit-message":
	case "regenerate-message":
		return Request{}, protocol.Inputf("trigger: regenerate-message is not supported: chatd's history keeps every reply; send a new message instead")
	default:
		return Request{}, protocol.Inputf("trigger: must be submit-message")
	}
	if len(req.Messages) == 0 {
		return Request{}, protocol.Inputf("messages: must hold at least one message")
	}
	last := len(req.Messages) - 1
	path := fmt.Sprintf("messages[%d]", last)
	var msg uiMessage
	if err := decode(req.Messages[last], &msg, false); err != nil {
		return Request{}, protocol.Inputf("%s: %s", path, err)
	}
	// What chatd keeps of the message must read back as it was sent.
	if err := blocks.CheckExact(req.Messages[last]); err != nil {
		return Request{}, protocol.Prefixed(err, path)
	}
	out := Request{ThreadID: *req.ID}
	switch msg.Role {
	case "user":
		return out, readUserMessage(&out, msg, path)
	case "assistant":
		answer, err := readAnswer(msg, path)
		if err != nil {
			return Request{}, err
		}
		answer.MessageID = msg.ID
		if req.MessageID != nil && *req.MessageID != "" {
			answer.MessageID = *req.MessageID
		}
		out.Answer = answer
		return out, nil
	}
	return Request{}, protocol.Inputf("%s.role: the last message must be the user's, or the assistant's holding the output of the %q tool", path, ToolName)
}

// readUserMessage takes a user message's text parts as the turn's text and
// its images, audio and content-block data parts as its blocks.
func readUserMessage(out *Request, msg uiMessage, path string) error {
	var texts []string
	verr := &blocks.ValidationError{}
	for i, raw := range msg.Parts {
		partPath := fmt.Sprintf("%s.parts[%d]", path, i)
		var p uiPart
		if err := decode(raw, &p, false); err != nil {
			return protocol.Inputf("%s: %s", partPath, err)
		}
		switch p.Type {
		case "text":
			if p.Text == nil {
				return protocol.Inputf("%s.text: required", partPath)
			}
			texts = append(texts, *p.Text)
		case "file":
			block, err := protocol.MediaBlock(p.URL, p.MediaType, partPath+".url")
			verr.Merge(err)
			out.Blocks = append(out.Blocks, block)
		case DataContentBlock:
			block, err := blocks.Decode(p.Data)
			if err != nil {
				verr.Merge(protocol.Prefixed(err, partPath+".data"))
			}
			out.Blocks = append(out.Blocks, block)
		}
		// Other parts (step boundaries, sources, reasoning) carry nothing
		// of the user's message.
	}
	if err := verr.Err(); err != nil {
		return err
	}
	out.Text = strings.Join(texts, "\n")
	if out.Text == "" && len(out.Blocks) == 0 {
		return protocol.Inputf("%s.parts: the message has no text and no attachments", path)
	}
	return nil
}

// readAnswer finds the output of the last elicitation tool call of an
// assistant message.
func readAnswer(msg uiMessage, path string) (*Answer, error) {
	for i := len(msg.Parts) - 1; i >= 0; i-- {
		partPath := fmt.Sprintf("%s.parts[%d]", path, i)
		var p uiPart
		if err := decode(msg.Parts[i], &p, false); err != nil {
			return nil, protocol.Inputf("%s: %s", partPath, err)
		}
		if p.Type != "tool-"+ToolName && (p.Type != "dynamic-tool" || p.ToolName != ToolName) {
			continue
		}
		answer := &Answer{ElicitationID: p.ToolCallID}
		switch p.State {
		case "output-available":
			var o toolOutput
			if err := decode(p.Output, &o, true); err != nil {
				return nil, protocol.Inputf("%s.output: must be an elicitation result {action, content?}: %s", partPath, err)
			}
			answer.Result, answer.Meta = elicit.Result{Action: o.Action, Content: o.Content}, o.Meta
		case "output-error":
			// The frontend could not collect an answer: the user dismissed
			// the question.
			answer.Result = elicit.Result{Action: elicit.Cancel}
		default:
			return nil, protocol.Inputf("%s.state: the %q tool call has no output yet (state %q)", partPath, ToolName, p.State)
		}
		return answer, nil
	}
	return nil, protocol.Inputf("%s: the last message is the assistant's but holds no %q tool output to answer with", path, ToolName)
}

// decode reads exactly one JSON value into v, numbers as json.Number so an
// answer's numbers are validated as the client wrote them.
func decode(data []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return describe(err)
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

func describe(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Errorf("%s: must not be %s", typeErr.Field, typeErr.Value)
	}
	return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
}
