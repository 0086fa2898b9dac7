package protocol

// What the protocols' request decoders share: one JSON decoding with errors
// worded for the client, the checks on the last message, and the answer to
// a paused turn.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

// Answer is the answer to a thread's pending elicitation, as a protocol's
// request carries it: the output of the AI SDK's client-side tool, or the
// AG-UI resume entry that answers an interrupt.
type Answer struct {
	// ElicitationID is the elicitation answered: the tool call's ID, or the
	// interrupt's.
	ElicitationID string
	Result        elicit.Result
	// Meta is the result's _meta, kept on the recorded answer.
	Meta map[string]any
	// MessageID is the UI message the answer continues, for a protocol that
	// names one (the AI SDK: the request's messageId, else the ID of the
	// message holding the tool output); empty otherwise.
	MessageID string
}

// Decode reads exactly one JSON value from data into v, numbers as
// json.Number so an answer's numbers are validated as the client wrote
// them. Members v does not declare are ignored: the protocols' bodies carry
// the application's own. The error's text is safe to show the client, after
// the caller has said what was being read.
func Decode(data []byte, v any) error {
	return decode(data, v, false)
}

// DecodeAnswer reads an elicitation result {action, content?, _meta?} that
// answers elicitation id. Any other member is refused: a result with one is
// not what the user answered. The error is an *InputError naming path.
func DecodeAnswer(id string, raw json.RawMessage, path string) (*Answer, error) {
	var r struct {
		Action  elicit.Action  `json:"action"`
		Content map[string]any `json:"content"`
		Meta    map[string]any `json:"_meta"`
	}
	if err := decode(raw, &r, true); err != nil {
		return nil, Inputf("%s: must be an elicitation result {action, content?}: %s", path, err)
	}
	return &Answer{ElicitationID: id, Result: elicit.Result{Action: r.Action, Content: r.Content}, Meta: r.Meta}, nil
}

// LastMessage decodes the last of messages, which must not be empty, into v
// and returns its path ("messages[n]") for the caller's own errors. Only the
// last message is read: chatd's history, not the client's copy, is the
// conversation. It returns an *InputError for a message that is not JSON of
// v's shape, and a *blocks.ValidationError for one chatd could not keep
// exactly as sent.
func LastMessage(messages []json.RawMessage, v any) (path string, err error) {
	last := len(messages) - 1
	path = fmt.Sprintf("messages[%d]", last)
	if err := Decode(messages[last], v); err != nil {
		return "", Inputf("%s: %s", path, err)
	}
	// What chatd keeps of the message must read back as it was sent.
	if err := blocks.CheckExact(messages[last]); err != nil {
		return "", Prefixed(err, path)
	}
	return path, nil
}

// ThreadID returns the thread ID a request gives in field, or an
// *InputError when it is absent or empty.
func ThreadID(id *string, field string) (string, error) {
	if id == nil || *id == "" {
		return "", Inputf("%s: required (the chatd thread ID)", field)
	}
	return *id, nil
}

// RequireContent returns an *InputError naming path when a user message
// holds neither text nor blocks: there would be nothing to answer.
func RequireContent(text string, content []blocks.ContentBlock, path string) error {
	if text == "" && len(content) == 0 {
		return Inputf("%s: the message has no text and no attachments", path)
	}
	return nil
}

// decode is Decode, refusing members v does not declare when strict is set.
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
