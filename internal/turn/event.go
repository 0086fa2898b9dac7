package turn

import (
	"encoding/json"
	"fmt"

	"chatd/internal/blocks"
	"chatd/internal/store"
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

// Names of the events on the wire: the SSE event names, and the names the
// turn log keeps them under.
const (
	NameStart     = "message.start"
	NameDelta     = "text.delta"
	NameCompleted = "turn.completed"
	NameError     = "error"
)

var kindNames = map[Kind]string{EventStart: NameStart, EventDelta: NameDelta, EventCompleted: NameCompleted, EventError: NameError}

var kindOfName = map[string]Kind{NameStart: EventStart, NameDelta: EventDelta, NameCompleted: EventCompleted, NameError: EventError}

// Event is one step of a turn, however it is read: live, from the turn's
// log, or replayed for an idempotent retry. The field of its Kind is set.
type Event struct {
	ID   int
	Kind Kind

	Start   Start    // EventStart
	Delta   Delta    // EventDelta
	Result  *Result  // EventCompleted
	Failure *Failure // EventError

	// data is the event's JSON as the turn log keeps it.
	data []byte
}

// Name is the event's wire name.
func (e Event) Name() string { return kindNames[e.Kind] }

// Data is the event's JSON as the SSE stream and the turn log carry it
// (an error event's is its Failure; the HTTP layer writes its own form).
func (e Event) Data() []byte { return e.data }

// Last reports whether the event ends its turn.
func (e Event) Last() bool { return e.Kind == EventCompleted || e.Kind == EventError }

// record is the event as the store logs it.
func (e Event) record() store.TurnEvent {
	return store.TurnEvent{ID: e.ID, Name: e.Name(), Data: e.data, Last: e.Last()}
}

// newEvent builds an event of kind from its typed payload.
func newEvent(id int, kind Kind, payload any) (Event, error) {
	data, err := blocks.Marshal(payload)
	if err != nil {
		return Event{}, err
	}
	ev := Event{ID: id, Kind: kind, data: data}
	switch p := payload.(type) {
	case Start:
		ev.Start = p
	case Delta:
		ev.Delta = p
	case *Result:
		ev.Result = p
	case *Failure:
		ev.Failure = p
	}
	return ev, nil
}

// decodeEvent reads an event back from the turn log.
func decodeEvent(rec store.TurnEvent) (Event, error) {
	kind, ok := kindOfName[rec.Name]
	if !ok {
		return Event{}, fmt.Errorf("turn log: event %d has the unknown name %q", rec.ID, rec.Name)
	}
	ev := Event{ID: rec.ID, Kind: kind, data: rec.Data}
	var err error
	switch kind {
	case EventStart:
		err = json.Unmarshal(rec.Data, &ev.Start)
	case EventDelta:
		err = json.Unmarshal(rec.Data, &ev.Delta)
	case EventCompleted:
		ev.Result, err = decodeResult(rec.Data)
	case EventError:
		ev.Failure = &Failure{}
		err = json.Unmarshal(rec.Data, ev.Failure)
		if err == nil && ev.Failure.Code == "" {
			err = fmt.Errorf("no code")
		}
	}
	if err != nil {
		return Event{}, fmt.Errorf("turn log: event %d (%s): %w", rec.ID, rec.Name, err)
	}
	return ev, nil
}

// Start is the data of a turn's first event.
type Start struct {
	ThreadID      string `json:"thread_id"`
	TurnID        string `json:"turn_id"`
	MessageID     string `json:"message_id"`
	UserMessageID string `json:"user_message_id"`
}

// Delta is the data of a text.delta event.
type Delta struct {
	Text string         `json:"delta"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// Result is a TurnResult: the data of turn.completed, the JSON answer of a
// turn, and what an idempotent retry replays.
type Result = ResultOf[blocks.Message]

// ResultOf is a TurnResult whose two messages are of type M: a Result, or
// the same TurnResult with its messages in another form (rendered, say),
// its members in the same order.
type ResultOf[M any] struct {
	ThreadID             string             `json:"thread_id"`
	TurnID               string             `json:"turn_id"`
	Status               string             `json:"status"`
	UserMessage          M                  `json:"user_message"`
	Message              M                  `json:"message"`
	StructuredResponse   StructuredResponse `json:"structured_response"`
	Elicitation          json.RawMessage    `json:"elicitation"`
	ElicitationExpiresAt *blocks.Timestamp  `json:"elicitation_expires_at"`
}

// WithMessages is r with its user message and reply given as user and reply.
func WithMessages[M any](r *Result, user, reply M) ResultOf[M] {
	return ResultOf[M]{
		ThreadID: r.ThreadID, TurnID: r.TurnID, Status: r.Status, UserMessage: user, Message: reply,
		StructuredResponse: r.StructuredResponse, Elicitation: r.Elicitation, ElicitationExpiresAt: r.ElicitationExpiresAt,
	}
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
	StatusStopped       = "stopped"
	StatusFailed        = "failed"
)

func decodeResult(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
