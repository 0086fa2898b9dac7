package turn

import (
	"encoding/json"

	"chatd/internal/blocks"
	"chatd/internal/processor"
)

// Kind says what an Event is.
type Kind int

// The kinds of event a turn emits, in the order they come.
const (
	EventStart Kind = iota
	EventDelta
	EventCompleted
	EventError
)

// Names of the events on the wire (SSE event names, and the turn log).
const (
	NameStart     = "message.start"
	NameDelta     = "text.delta"
	NameCompleted = "turn.completed"
	NameError     = "error"
)

var kindNames = map[Kind]string{EventStart: NameStart, EventDelta: NameDelta, EventCompleted: NameCompleted, EventError: NameError}

// Event is one step of a turn. Data is the event's JSON as the SSE stream
// and the turn log carry it; the typed fields say the same for consumers
// that translate it.
type Event struct {
	ID   int
	Kind Kind
	Data []byte

	Start  Start           // EventStart
	Delta  processor.Delta // EventDelta
	Result *Result         // EventCompleted
	Err    error           // EventError
}

// Name is the event's wire name.
func (e Event) Name() string { return kindNames[e.Kind] }

// Start is the data of a turn's first event.
type Start struct {
	ThreadID      string `json:"thread_id"`
	TurnID        string `json:"turn_id"`
	MessageID     string `json:"message_id"`
	UserMessageID string `json:"user_message_id"`
}

// Delta is the data of a text.delta event.
type Delta struct {
	Delta string         `json:"delta"`
	Meta  map[string]any `json:"_meta,omitempty"`
}

// Result is a TurnResult: the data of turn.completed, the JSON answer of a
// turn, and what an idempotent retry replays.
type Result struct {
	ThreadID             string             `json:"thread_id"`
	TurnID               string             `json:"turn_id"`
	Status               string             `json:"status"`
	UserMessage          blocks.Message     `json:"user_message"`
	Message              blocks.Message     `json:"message"`
	StructuredResponse   StructuredResponse `json:"structured_response"`
	Elicitation          json.RawMessage    `json:"elicitation"`
	ElicitationExpiresAt *blocks.Timestamp  `json:"elicitation_expires_at"`
}

// StructuredResponse mirrors the assistant message's blocks and _meta; it is
// never null and its members are never null.
type StructuredResponse struct {
	ContentBlocks []blocks.ContentBlock `json:"content_blocks"`
	Meta          map[string]any        `json:"_meta"`
}

// Turn outcomes, as in Result.Status and the turns metric.
const (
	StatusCompleted     = "completed"
	StatusInputRequired = "input_required"
	StatusFailed        = "failed"
)

// DecodeResult reads a TurnResult back, for consumers of a logged or
// replayed turn.completed event that need its fields.
func DecodeResult(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
