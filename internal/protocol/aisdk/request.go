package aisdk

import (
	"encoding/json"
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
	// Uploads are the message's attachments to store as files first, each
	// linked at its place in Blocks.
	Uploads []protocol.Upload
	// Answer is set when the last message holds the output of the
	// elicitation tool; its MessageID is the UI message the answer
	// continues: the request's messageId, else the ID of the message
	// holding the tool output.
	Answer *protocol.Answer
	// StopOnDisconnect is the body's stopOnDisconnect (sent through
	// DefaultChatTransport's body option): the turn stops when the client
	// aborts the request (useChat's stop).
	StopOnDisconnect bool
	// UserMessageID is the ID of the user's message as the client sent it:
	// the ID of a message in history when the client edits one
	// (sendMessage({text, messageId})), a client-made one otherwise.
	UserMessageID string
	// Regenerate is set for trigger regenerate-message (useChat's
	// regenerate()): RegenerateID names the assistant message to
	// regenerate, empty for the thread's head. Nothing else is read.
	Regenerate   bool
	RegenerateID string
}

// ToolName is the client-side tool a pause is called as.
const ToolName = "elicitation"

// chatRequest is the body DefaultChatTransport sends. Other members (the
// transport's body option) are the application's and are ignored, except
// stopOnDisconnect.
type chatRequest struct {
	ID               *string           `json:"id"`
	Messages         []json.RawMessage `json:"messages"`
	Trigger          string            `json:"trigger"`
	MessageID        *string           `json:"messageId"`
	StopOnDisconnect bool              `json:"stopOnDisconnect"`
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
	Filename  string `json:"filename"`
	// data-content-block
	Data json.RawMessage `json:"data"`
	// tool-elicitation and dynamic-tool
	ToolName   string          `json:"toolName"`
	ToolCallID string          `json:"toolCallId"`
	State      string          `json:"state"`
	Output     json.RawMessage `json:"output"`
}

// DecodeRequest reads a chat request. It returns a *protocol.InputError for
// a body it cannot use and a *blocks.ValidationError, with paths, for
// attachments that are not valid content blocks. Only the last message is
// read: chatd's history, not the client's copy, is the conversation.
func DecodeRequest(body []byte) (Request, error) {
	var req chatRequest
	if err := protocol.Decode(body, &req); err != nil {
		return Request{}, protocol.Inputf("malformed chat request: %s", err)
	}
	threadID, err := protocol.ThreadID(req.ID, "id")
	if err != nil {
		return Request{}, err
	}
	switch req.Trigger {
	case "", "submit-message":
	case "regenerate-message":
		out := Request{ThreadID: threadID, StopOnDisconnect: req.StopOnDisconnect, Regenerate: true}
		if req.MessageID != nil {
			out.RegenerateID = *req.MessageID
		}
		return out, nil
	default:
		return Request{}, protocol.Inputf("trigger: must be submit-message or regenerate-message")
	}
	if len(req.Messages) == 0 {
		return Request{}, protocol.Inputf("messages: must hold at least one message")
	}
	var msg uiMessage
	path, err := protocol.LastMessage(req.Messages, &msg)
	if err != nil {
		return Request{}, err
	}
	out := Request{ThreadID: threadID, StopOnDisconnect: req.StopOnDisconnect}
	switch msg.Role {
	case "user":
		out.UserMessageID = msg.ID
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
// its file parts (data: URLs and chatd:file/ links) and content-block data
// parts as its blocks.
func readUserMessage(out *Request, msg uiMessage, path string) error {
	var texts []string
	var att protocol.Attachments
	verr := &blocks.ValidationError{}
	for i, raw := range msg.Parts {
		partPath := fmt.Sprintf("%s.parts[%d]", path, i)
		var p uiPart
		if err := protocol.Decode(raw, &p); err != nil {
			return protocol.Inputf("%s: %s", partPath, err)
		}
		switch p.Type {
		case "text":
			if p.Text == nil {
				return protocol.Inputf("%s.text: required", partPath)
			}
			texts = append(texts, *p.Text)
		case "file":
			verr.Merge(att.AddURL(p.Filename, p.MediaType, p.URL, partPath+".url"))
		case DataContentBlock:
			block, err := blocks.Decode(p.Data)
			if err != nil {
				verr.Merge(protocol.Prefixed(err, partPath+".data"))
			}
			att.Blocks = append(att.Blocks, block)
		}
		// Other parts (step boundaries, sources, reasoning) carry nothing
		// of the user's message.
	}
	if err := verr.Err(); err != nil {
		return err
	}
	out.Blocks, out.Uploads = att.Blocks, att.Uploads
	out.Text = strings.Join(texts, "\n")
	return protocol.RequireContent(out.Text, out.Blocks, path+".parts")
}

// readAnswer finds the output of the last elicitation tool call of an
// assistant message.
func readAnswer(msg uiMessage, path string) (*protocol.Answer, error) {
	for i := len(msg.Parts) - 1; i >= 0; i-- {
		partPath := fmt.Sprintf("%s.parts[%d]", path, i)
		var p uiPart
		if err := protocol.Decode(msg.Parts[i], &p); err != nil {
			return nil, protocol.Inputf("%s: %s", partPath, err)
		}
		if p.Type != "tool-"+ToolName && (p.Type != "dynamic-tool" || p.ToolName != ToolName) {
			continue
		}
		switch p.State {
		case "output-available":
			return protocol.DecodeAnswer(p.ToolCallID, p.Output, partPath+".output")
		case "output-error":
			// The frontend could not collect an answer: the user dismissed
			// the question.
			return &protocol.Answer{ElicitationID: p.ToolCallID, Result: elicit.Result{Action: elicit.Cancel}}, nil
		}
		return nil, protocol.Inputf("%s.state: the %q tool call has no output yet (state %q)", partPath, ToolName, p.State)
	}
	return nil, protocol.Inputf("%s: the last message is the assistant's but holds no %q tool output to answer with", path, ToolName)
}
