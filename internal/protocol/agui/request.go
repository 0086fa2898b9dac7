package agui

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

// Request is what a POST /v1/ag-ui run asks for: a turn on the user's last
// message, or the answer to the thread's pending elicitation.
type Request struct {
	// ThreadID is the input's threadId: a chatd thread ID.
	ThreadID string
	RunID    string
	// Text and Blocks are the user's message (when Answer is nil).
	Text   string
	Blocks []blocks.ContentBlock
	Answer *Answer
}

// Answer is the resume entry that answers an interrupt.
type Answer struct {
	ElicitationID string
	Result        elicit.Result
	Meta          map[string]any
}

// runAgentInput is AG-UI's RunAgentInput; members chatd does not use
// (state, tools, context, forwardedProps) are accepted and ignored.
type runAgentInput struct {
	ThreadID *string           `json:"threadId"`
	RunID    *string           `json:"runId"`
	Messages []json.RawMessage `json:"messages"`
	Resume   []resumeEntry     `json:"resume"`
}

type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

type payload struct {
	Action  elicit.Action  `json:"action"`
	Content map[string]any `json:"content"`
	Meta    map[string]any `json:"_meta"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source struct {
		Type     string `json:"type"`
		Value    string `json:"value"`
		MimeType string `json:"mimeType"`
	} `json:"source"`
}

// DecodeRequest reads a RunAgentInput. It returns a *protocol.InputError for
// input it cannot use and a *blocks.ValidationError, with paths, for
// attachments that are not valid content blocks. Only the last message is
// read (chatd's history is the conversation), and not even that when the
// run resumes an interrupt.
func DecodeRequest(body []byte) (Request, error) {
	var in runAgentInput
	if err := decode(body, &in, false); err != nil {
		return Request{}, protocol.Inputf("malformed RunAgentInput: %s", err)
	}
	if in.ThreadID == nil || *in.ThreadID == "" {
		return Request{}, protocol.Inputf("threadId: required (the chatd thread ID)")
	}
	if in.RunID == nil || *in.RunID == "" {
		return Request{}, protocol.Inputf("runId: required")
	}
	out := Request{ThreadID: *in.ThreadID, RunID: *in.RunID}
	if len(in.Resume) > 0 {
		answer, err := readResume(in.Resume)
		out.Answer = answer
		return out, err
	}
	if len(in.Messages) == 0 {
		return Request{}, protocol.Inputf("messages: must end with the user's message (or resume must answer the interrupt)")
	}
	last := len(in.Messages) - 1
	path := fmt.Sprintf("messages[%d]", last)
	var msg message
	if err := decode(in.Messages[last], &msg, false); err != nil {
		return Request{}, protocol.Inputf("%s: %s", path, err)
	}
	// What chatd keeps of the message must read back as it was sent.
	if err := blocks.CheckExact(in.Messages[last]); err != nil {
		return Request{}, protocol.Prefixed(err, path)
	}
	if msg.Role != "user" {
		return Request{}, protocol.Inputf("%s.role: the last message must be the user's (or resume must answer the interrupt)", path)
	}
	return out, readContent(&out, msg.Content, path+".content")
}

// readResume reads the one resume entry a chatd thread can have: its only
// pending elicitation.
func readResume(entries []resumeEntry) (*Answer, error) {
	if len(entries) != 1 {
		return nil, protocol.Inputf("resume: must hold exactly one entry (a thread has at most one pending interrupt)")
	}
	e := entries[0]
	answer := &Answer{ElicitationID: e.InterruptID}
	if e.InterruptID == "" {
		return nil, protocol.Inputf("resume[0].interruptId: required")
	}
	switch e.Status {
	case "cancelled":
		answer.Result = elicit.Result{Action: elicit.Cancel}
		return answer, nil
	case "resolved":
	default:
		return nil, protocol.Inputf(`resume[0].status: must be "resolved" or "cancelled"`)
	}
	var p payload
	if len(e.Payload) == 0 {
		return nil, protocol.Inputf("resume[0].payload: required when resolved: {action, content?}")
	}
	if err := decode(e.Payload, &p, true); err != nil {
		return nil, protocol.Inputf("resume[0].payload: must be an elicitation result {action, content?}: %s", err)
	}
	if err := blocks.CheckExact(e.Payload); err != nil {
		return nil, protocol.Prefixed(err, "resume[0].payload")
	}
	answer.Result, answer.Meta = elicit.Result{Action: p.Action, Content: p.Content}, p.Meta
	return answer, nil
}

// readContent takes a user message's content: a string, or parts whose text
// is the turn's text and whose inline images and audio are its blocks.
func readContent(out *Request, raw json.RawMessage, path string) error {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		out.Text = text
	} else {
		var parts []contentPart
		if err := decode(raw, &parts, false); err != nil {
			return protocol.Inputf("%s: must be a string or an array of content parts: %s", path, err)
		}
		var texts []string
		verr := &blocks.ValidationError{}
		for i, p := range parts {
			partPath := fmt.Sprintf("%s[%d]", path, i)
			switch p.Type {
			case "text":
				texts = append(texts, p.Text)
			case "image", "audio":
				if p.Source.Type != "data" {
					verr.Add(partPath+".source", `only inline data sources ("type": "data") become content blocks; chatd does not fetch attachments`)
					continue
				}
				block, err := protocol.MediaBlock("data:"+p.Source.MimeType+";base64,"+p.Source.Value, p.Source.MimeType, partPath+".source")
				verr.Merge(err)
				out.Blocks = append(out.Blocks, block)
			default:
				verr.Add(partPath+".type", fmt.Sprintf("%q parts are not supported; use text, image or audio", p.Type))
			}
		}
		if err := verr.Err(); err != nil {
			return err
		}
		out.Text = strings.Join(texts, "\n")
	}
	if out.Text == "" && len(out.Blocks) == 0 {
		return protocol.Inputf("%s: the message has no text and no attachments", path)
	}
	return nil
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
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return fmt.Errorf("%s: must not be %s", typeErr.Field, typeErr.Value)
		}
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
