package agui

import (
	"encoding/json"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/protocol"
	"chatd/internal/turn"
)

// The AG-UI event types chatd sends.
const (
	RunStarted         = "RUN_STARTED"
	RunFinished        = "RUN_FINISHED"
	RunError           = "RUN_ERROR"
	TextMessageStart   = "TEXT_MESSAGE_START"
	TextMessageContent = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd     = "TEXT_MESSAGE_END"
	Custom             = "CUSTOM"
)

// ContentBlocksEvent is the name of the CUSTOM event that carries a reply's
// content blocks and _meta.
const ContentBlocksEvent = "chatd.content_blocks"

// StatusItemEvent is the name of the CUSTOM event that carries a status item
// streamed without text (_meta["drupal.org/ai.status_item"]: a running
// tool, its progress).
const StatusItemEvent = "chatd.status_item"

// The reasons an interrupt gives: a form to fill, (for a schema that asks
// for no fields) a yes/no confirmation, or a page to visit (URL mode, the
// page in metadata.url), answered accept once the user is done there.
const (
	ReasonInputRequired = "input_required"
	ReasonConfirmation  = "confirmation"
	ReasonURL           = "url"
)

// Run writes one turn as the events of an AG-UI run. Its methods are called
// in the turn's event order (Started, Start, Delta…, then Completed or
// Error) and not concurrently; write receives each event's JSON, one SSE
// data line.
type Run struct {
	write func(data []byte)
	// scratch is reused for the events built by hand (text content): write
	// must not keep the data it is given.
	scratch  []byte
	threadID string
	runID    string

	started   bool
	messageID string
	textOpen  bool
	// streamed counts the bytes of text that went out, so a reply whose
	// processor streamed nothing still sends its text (as one delta), and a
	// stopped reply the rest of the text it kept.
	streamed int
	ended    bool
}

// NewRun returns a Run for the input's threadId and runId, writing to
// write, which must copy what it keeps of each event.
func NewRun(write func(data []byte), threadID, runID string) *Run {
	return &Run{write: write, threadID: threadID, runID: runID}
}

type runEvent struct {
	Type     string   `json:"type"`
	ThreadID string   `json:"threadId"`
	RunID    string   `json:"runId"`
	Result   *Result  `json:"result,omitempty"`
	Outcome  *Outcome `json:"outcome,omitempty"`
}

// Result is what a finished run says of the turn: the IDs a frontend needs
// to find it in chatd's history.
type Result struct {
	ThreadID      string `json:"thread_id"`
	TurnID        string `json:"turn_id"`
	MessageID     string `json:"message_id"`
	UserMessageID string `json:"user_message_id"`
	Status        string `json:"status"`
}

// Outcome is RUN_FINISHED's outcome.
type Outcome struct {
	Type       string      `json:"type"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// Interrupt is a pending elicitation as an AG-UI interrupt.
type Interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message"`
	ResponseSchema json.RawMessage `json:"responseSchema"`
	ExpiresAt      string          `json:"expiresAt,omitempty"`
	Metadata       struct {
		Meta json.RawMessage `json:"_meta,omitempty"`
		// URL and ElicitationID are a URL-mode question's: the page the
		// user is asked to visit (there is no responseSchema then).
		URL           string `json:"url,omitempty"`
		ElicitationID string `json:"elicitationId,omitempty"`
	} `json:"metadata"`
}

type textEvent struct {
	Type      string         `json:"type"`
	MessageID string         `json:"messageId"`
	Role      string         `json:"role,omitempty"`
	Delta     string         `json:"delta,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// statusEvent is the CUSTOM event of a status item.
type statusEvent struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Value any    `json:"value"`
}

type customEvent struct {
	Type  string       `json:"type"`
	Name  string       `json:"name"`
	Value blocksRecord `json:"value"`
}

type blocksRecord struct {
	MessageID     string                `json:"message_id"`
	ContentBlocks []blocks.ContentBlock `json:"content_blocks"`
	Meta          map[string]any        `json:"_meta"`
}

type errorEvent struct {
	Type     string         `json:"type"`
	Message  string         `json:"message"`
	Code     string         `json:"code"`
	Metadata *errorMetadata `json:"metadata,omitempty"`
}

// errorMetadata carries a validation failure's field errors: RUN_ERROR has
// no member of its own for them.
type errorMetadata struct {
	Errors []blocks.FieldError `json:"errors"`
}

// Started opens the run.
func (r *Run) Started() {
	if !r.started {
		r.started = true
		r.event(runEvent{Type: RunStarted, ThreadID: r.threadID, RunID: r.runID})
	}
}

// Start takes the turn's first event: the assistant message's ID.
func (r *Run) Start(st turn.Start) {
	r.Started()
	r.messageID = st.MessageID
}

// Delta streams a piece of the reply's text; its _meta rides the event's
// metadata under "_meta".
func (r *Run) Delta(text string, meta map[string]any) {
	if text == "" {
		// AG-UI has no content event without text: a tool's status (and
		// its progress) is a CUSTOM event of its own.
		if item, ok := meta[blocks.MetaStatusItem]; ok {
			r.event(statusEvent{Type: Custom, Name: StatusItemEvent, Value: item})
		}
		return
	}
	if !r.textOpen {
		r.textOpen = true
		r.event(textEvent{Type: TextMessageStart, MessageID: r.messageID, Role: "assistant"})
	}
	r.streamed += len(text)
	if len(meta) > 0 {
		r.event(textEvent{Type: TextMessageContent, MessageID: r.messageID, Delta: text, Metadata: map[string]any{"_meta": meta}})
		return
	}
	// Content events are most of a run: built by hand, without an encoder
	// each.
	b := append(r.scratch[:0], `{"type":"TEXT_MESSAGE_CONTENT","messageId":`...)
	b = blocks.AppendString(b, r.messageID)
	b = append(b, `,"delta":`...)
	b = blocks.AppendString(b, text)
	r.scratch = append(b, '}')
	r.write(r.scratch)
}

func (r *Run) closeText() {
	if r.textOpen {
		r.textOpen = false
		r.event(textEvent{Type: TextMessageEnd, MessageID: r.messageID})
	}
}

// Completed finishes the run with the turn's result: the text when none was
// streamed, the blocks and _meta, and the outcome — success, or an
// interrupt for a pause.
func (r *Run) Completed(res *turn.Result) {
	if r.ended {
		return
	}
	r.ended = true
	if r.messageID == "" {
		r.Start(turn.Start{MessageID: res.Message.ID})
	}
	switch text := res.Message.Text; {
	case r.streamed == 0:
		r.Delta(text, nil)
	case res.Status == turn.StatusStopped && len(text) > r.streamed:
		// A stopped turn's kept text begins with what was streamed.
		r.Delta(text[r.streamed:], nil)
	}
	r.closeText()
	if len(res.Message.ContentBlocks) > 0 || len(res.Message.Meta) > 0 {
		rec := blocksRecord{MessageID: res.Message.ID, ContentBlocks: res.Message.ContentBlocks, Meta: res.Message.Meta}
		if rec.ContentBlocks == nil {
			rec.ContentBlocks = []blocks.ContentBlock{}
		}
		if rec.Meta == nil {
			rec.Meta = map[string]any{}
		}
		r.event(customEvent{Type: Custom, Name: ContentBlocksEvent, Value: rec})
	}
	fin := runEvent{Type: RunFinished, ThreadID: r.threadID, RunID: r.runID, Outcome: &Outcome{Type: "success"},
		Result: &Result{ThreadID: res.ThreadID, TurnID: res.TurnID, MessageID: res.Message.ID, UserMessageID: res.UserMessage.ID, Status: res.Status}}
	if e, ok := protocol.ReadElicitation(res.Elicitation); ok && res.Status == turn.StatusInputRequired {
		in := Interrupt{ID: e.ID, Reason: ReasonInputRequired, Message: e.Message, ResponseSchema: e.Schema}
		if e.Confirmation {
			in.Reason = ReasonConfirmation
		}
		if res.ElicitationExpiresAt != nil {
			in.ExpiresAt = blocks.FormatTimestamp(time.Time(*res.ElicitationExpiresAt))
		}
		in.Metadata.Meta = e.Meta
		if e.URL != "" {
			in.Reason, in.ResponseSchema = ReasonURL, nil
			in.Metadata.URL, in.Metadata.ElicitationID = e.URL, e.ElicitationID
		}
		fin.Outcome = &Outcome{Type: "interrupt", Interrupts: []Interrupt{in}}
	}
	r.event(fin)
}

// Error ends the run with RUN_ERROR carrying chatd's problem code, the
// problem's detail as the message, and any field errors as metadata.errors.
func (r *Run) Error(code, message string, errs []blocks.FieldError) {
	if r.ended {
		return
	}
	r.ended = true
	r.closeText()
	ev := errorEvent{Type: RunError, Message: message, Code: code}
	if len(errs) > 0 {
		ev.Metadata = &errorMetadata{Errors: errs}
	}
	r.event(ev)
}

func (r *Run) event(v any) {
	data, err := blocks.Marshal(v)
	if err != nil {
		data, _ = blocks.Marshal(errorEvent{Type: RunError, Message: "internal error", Code: "internal"})
	}
	r.write(data)
}
