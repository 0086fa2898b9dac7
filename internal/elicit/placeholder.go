package elicit

// PLACEHOLDER: the elicit work replaces this file; the exported API stays.

import (
	"encoding/json"

	"chatd/internal/blocks"
	"github.com/google/uuid"
)

// Limits bound the size of a requested schema.
type Limits struct {
	MaxProperties int
	MaxOptions    int
	MaxTextLen    int
}

// DefaultLimits are the documented defaults.
var DefaultLimits = Limits{MaxProperties: 64, MaxOptions: 256, MaxTextLen: 4096}

// Request is an MCP elicitation/create params object.
type Request struct {
	ID              string
	Message         string
	RequestedSchema json.RawMessage
	Meta            map[string]any
}

// NewRequest validates and builds a request with a fresh ID.
func NewRequest(message string, requestedSchema json.RawMessage, meta map[string]any) (*Request, error) {
	return DefaultLimits.NewRequest(message, requestedSchema, meta)
}

// NewRequest validates and builds a request with a fresh ID under l.
func (l Limits) NewRequest(message string, requestedSchema json.RawMessage, meta map[string]any) (*Request, error) {
	id := uuid.NewString()
	m := map[string]any{}
	for k, v := range meta {
		m[k] = v
	}
	m[blocks.MetaElicitationID] = id
	return &Request{ID: id, Message: message, RequestedSchema: requestedSchema, Meta: m}, nil
}

// MarshalJSON encodes {message, requestedSchema, _meta}.
func (r *Request) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"message": r.Message, "requestedSchema": r.RequestedSchema, "_meta": r.Meta})
}

// DecodeRequest decodes and validates a persisted or received request.
func DecodeRequest(data []byte) (*Request, error) {
	var w struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		Meta            map[string]any  `json:"_meta"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	id, _ := w.Meta[blocks.MetaElicitationID].(string)
	return &Request{ID: id, Message: w.Message, RequestedSchema: w.RequestedSchema, Meta: w.Meta}, nil
}

// Action is an ElicitResult action.
type Action string

// The three actions.
const (
	Accept  Action = "accept"
	Decline Action = "decline"
	Cancel  Action = "cancel"
)

// Result is an MCP ElicitResult.
type Result struct {
	Action  Action         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// Validate checks res against the request's schema, reporting every violation.
func (r *Request) Validate(res Result) error { return nil }

// IsConfirm reports whether the schema is a trivial confirm.
func (r *Request) IsConfirm() bool { return false }
