package agui

import (
	"encoding/json"
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
	// Uploads are the message's attachments to store as files first, each
	// linked at its place in Blocks.
	Uploads []protocol.Upload
	// Answer is set when the run resumes the interrupt: the resume entry
	// that answers it. Its MessageID is empty: AG-UI names no message to
	// continue.
	Answer *protocol.Answer
	// StopOnDisconnect is forwardedProps.stopOnDisconnect: the run's turn
	// stops when the client aborts the run (HttpAgent.abortRun).
	StopOnDisconnect bool
}

// runAgentInput is AG-UI's RunAgentInput; members chatd does not use
// (state, tools, context) are accepted and ignored, and of forwardedProps
// only stopOnDisconnect is read.
type runAgentInput struct {
	ThreadID       *string           `json:"threadId"`
	RunID          *string           `json:"runId"`
	Messages       []json.RawMessage `json:"messages"`
	Resume         []resumeEntry     `json:"resume"`
	ForwardedProps json.RawMessage   `json:"forwardedProps"`
}

// stopOnDisconnect reads forwardedProps.stopOnDisconnect: absent, or any
// forwardedProps that is not an object, is false.
func stopOnDisconnect(props json.RawMessage) (bool, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(props, &fields) != nil || fields["stopOnDisconnect"] == nil {
		return false, nil
	}
	var on bool
	if err := json.Unmarshal(fields["stopOnDisconnect"], &on); err != nil {
		return false, protocol.Inputf("forwardedProps.stopOnDisconnect: must be a boolean")
	}
	return on, nil
}

type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// binary, the part earlier AG-UI versions sent files as.
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
	URL      string `json:"url"`
	Filename string `json:"filename"`
	Source   struct {
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
	if err := protocol.Decode(body, &in); err != nil {
		return Request{}, protocol.Inputf("malformed RunAgentInput: %s", err)
	}
	threadID, err := protocol.ThreadID(in.ThreadID, "threadId")
	if err != nil {
		return Request{}, err
	}
	if in.RunID == nil || *in.RunID == "" {
		return Request{}, protocol.Inputf("runId: required")
	}
	out := Request{ThreadID: threadID, RunID: *in.RunID}
	if out.StopOnDisconnect, err = stopOnDisconnect(in.ForwardedProps); err != nil {
		return Request{}, err
	}
	if len(in.Resume) > 0 {
		answer, err := readResume(in.Resume)
		out.Answer = answer
		return out, err
	}
	if len(in.Messages) == 0 {
		return Request{}, protocol.Inputf("messages: must end with the user's message (or resume must answer the interrupt)")
	}
	var msg message
	path, err := protocol.LastMessage(in.Messages, &msg)
	if err != nil {
		return Request{}, err
	}
	if msg.Role != "user" {
		return Request{}, protocol.Inputf("%s.role: the last message must be the user's (or resume must answer the interrupt)", path)
	}
	return out, readContent(&out, msg.Content, path+".content")
}

// readResume reads the one resume entry a chatd thread can have: its only
// pending elicitation.
func readResume(entries []resumeEntry) (*protocol.Answer, error) {
	if len(entries) != 1 {
		return nil, protocol.Inputf("resume: must hold exactly one entry (a thread has at most one pending interrupt)")
	}
	e := entries[0]
	if e.InterruptID == "" {
		return nil, protocol.Inputf("resume[0].interruptId: required")
	}
	switch e.Status {
	case "cancelled":
		return &protocol.Answer{ElicitationID: e.InterruptID, Result: elicit.Result{Action: elicit.Cancel}}, nil
	case "resolved":
	default:
		return nil, protocol.Inputf(`resume[0].status: must be "resolved" or "cancelled"`)
	}
	if len(e.Payload) == 0 {
		return nil, protocol.Inputf("resume[0].payload: required when resolved: {action, content?}")
	}
	answer, err := protocol.DecodeAnswer(e.InterruptID, e.Payload, "resume[0].payload")
	if err != nil {
		return nil, err
	}
	// The payload is not part of the messages, whose last one is checked
	// the same way: what chatd keeps of it must read back as it was sent.
	if err := blocks.CheckExact(e.Payload); err != nil {
		return nil, protocol.Prefixed(err, "resume[0].payload")
	}
	return answer, nil
}

// readContent takes a user message's content: a string, or parts whose text
// is the turn's text and whose inline attachments (images, audio, video,
// documents, and the earlier binary parts) are its blocks.
func readContent(out *Request, raw json.RawMessage, path string) error {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		out.Text = text
	} else {
		var parts []contentPart
		if err := protocol.Decode(raw, &parts); err != nil {
			return protocol.Inputf("%s: must be a string or an array of content parts: %s", path, err)
		}
		var texts []string
		var att protocol.Attachments
		verr := &blocks.ValidationError{}
		for i, p := range parts {
			partPath := fmt.Sprintf("%s[%d]", path, i)
			switch p.Type {
			case "text":
				texts = append(texts, p.Text)
			case "image", "audio", "video", "document":
				if p.Source.Type != "data" {
					verr.Add(partPath+".source", `only inline data sources ("type": "data") become content blocks; chatd does not fetch attachments`)
					continue
				}
				if kind := p.Type; kind != "document" && !strings.HasPrefix(strings.ToLower(p.Source.MimeType), kind+"/") {
					verr.Add(partPath+".source", fmt.Sprintf("mimeType %q: an %s part holds %s/*", p.Source.MimeType, kind, kind))
					continue
				}
				verr.Merge(att.AddData("", p.Source.MimeType, p.Source.Value, partPath+".source"))
			case "binary":
				switch {
				case p.Data != "":
					verr.Merge(att.AddData(p.Filename, p.MimeType, p.Data, partPath+".data"))
				case strings.HasPrefix(p.URL, protocol.FileURIPrefix):
					verr.Merge(att.AddURL(p.Filename, p.MimeType, p.URL, partPath+".url"))
				default:
					verr.Add(partPath+".data", "required: chatd does not fetch attachments (a chatd:file/<id> url links an uploaded file)")
				}
			default:
				verr.Add(partPath+".type", fmt.Sprintf("%q parts are not supported; use text, image, audio, video, document or binary", p.Type))
			}
		}
		if err := verr.Err(); err != nil {
			return err
		}
		out.Blocks, out.Uploads = att.Blocks, att.Uploads
		out.Text = strings.Join(texts, "\n")
	}
	return protocol.RequireContent(out.Text, out.Blocks, path)
}
