package aisdk

import (
	"encoding/json"

	"chatd/internal/blocks"
	"chatd/internal/protocol"
	"chatd/internal/turn"
)

// Header is the response header that marks a UI message stream, and
// HeaderValue its value.
const (
	Header      = "x-vercel-ai-ui-message-stream"
	HeaderValue = "v1"
)

// DataContentBlock is the type of the data part that carries one content
// block.
const DataContentBlock = "data-content-block"

// Done is the stream's last data line.
var Done = []byte("[DONE]")

// Stream writes one turn as UI message stream parts. Its methods are called
// in the turn's event order (Start, Delta…, then Completed or Error) and not
// concurrently; write receives each part's JSON, one SSE data line.
type Stream struct {
	write func(data []byte)
	// scratch is reused for the parts built by hand (text deltas): write
	// must not keep the data it is given.
	scratch []byte
	// continues is the UI message an answer's reply continues.
	continues string

	start    turn.Start
	started  bool
	textOpen bool
	// streamed counts the bytes of text that went out, so a reply whose
	// processor streamed nothing still sends its text (as one delta), and a
	// stopped reply the rest of the text it kept.
	streamed int
	ended    bool
}

// NewStream returns a Stream writing to write, which must copy what it
// keeps of each part. continues, when set, is the
// ID of the UI message the turn's reply continues (the paused message an
// answer resumes); otherwise the reply is a new message with the assistant
// message's ID.
func NewStream(write func(data []byte), continues string) *Stream {
	return &Stream{write: write, continues: continues}
}

type startPart struct {
	Type      string `json:"type"`
	MessageID string `json:"messageId"`
}

type typePart struct {
	Type string `json:"type"`
}

type textPart struct {
	Type             string           `json:"type"`
	ID               string           `json:"id"`
	Delta            *string          `json:"delta,omitempty"`
	ProviderMetadata *providerMetaMap `json:"providerMetadata,omitempty"`
}

// providerMetaMap carries a delta's _meta: providerMetadata is keyed by
// provider, and chatd is the provider.
type providerMetaMap struct {
	Chatd struct {
		Meta map[string]any `json:"_meta"`
	} `json:"chatd"`
}

type dataPart struct {
	Type string              `json:"type"`
	Data blocks.ContentBlock `json:"data"`
}

type metadataPart struct {
	Type            string `json:"type"`
	MessageMetadata struct {
		Chatd Metadata `json:"chatd"`
	} `json:"messageMetadata"`
}

// Metadata is what chatd says of a reply in its UI message's metadata.
type Metadata struct {
	ThreadID      string         `json:"thread_id"`
	TurnID        string         `json:"turn_id"`
	MessageID     string         `json:"message_id"`
	UserMessageID string         `json:"user_message_id"`
	Meta          map[string]any `json:"_meta"`
}

type toolPart struct {
	Type       string          `json:"type"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Input      json.RawMessage `json:"input,omitempty"`
}

type finishPart struct {
	Type         string `json:"type"`
	FinishReason string `json:"finishReason"`
}

type abortPart struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

type errorPart struct {
	Type      string `json:"type"`
	ErrorText string `json:"errorText"`
}

// Start opens the reply: the turn's first event.
func (s *Stream) Start(st turn.Start) {
	if s.started {
		return
	}
	s.start, s.started = st, true
	id := st.MessageID
	if s.continues != "" {
		id = s.continues
	}
	s.part(startPart{Type: "start", MessageID: id})
	// A step boundary before the reply: in a continued message it ends the
	// step holding the answered tool call, so the message does not look
	// like one still waiting for tool outputs.
	s.part(typePart{Type: "start-step"})
}

// Delta streams a piece of the reply's text; its _meta rides the part's
// providerMetadata under "chatd".
func (s *Stream) Delta(text string, meta map[string]any) {
	if text == "" && len(meta) == 0 {
		return
	}
	s.openText()
	s.streamed += len(text)
	if len(meta) > 0 {
		delta := text // a copy, so text itself does not escape on the fast path
		p := textPart{Type: "text-delta", ID: s.start.MessageID, Delta: &delta, ProviderMetadata: &providerMetaMap{}}
		p.ProviderMetadata.Chatd.Meta = meta
		s.part(p)
		return
	}
	// Deltas are most of a stream: built by hand, without an encoder each.
	b := append(s.scratch[:0], `{"type":"text-delta","id":`...)
	b = blocks.AppendString(b, s.start.MessageID)
	b = append(b, `,"delta":`...)
	b = blocks.AppendString(b, text)
	s.scratch = append(b, '}')
	s.write(s.scratch)
}

func (s *Stream) openText() {
	if !s.textOpen {
		s.textOpen = true
		s.part(textPart{Type: "text-start", ID: s.start.MessageID})
	}
}

func (s *Stream) closeText() {
	if s.textOpen {
		s.textOpen = false
		s.part(textPart{Type: "text-end", ID: s.start.MessageID})
	}
}

// Completed ends the reply with the turn's result: the text when none was
// streamed, the content blocks, chatd's metadata, the pause as a call of
// the elicitation tool, and the finish (an abort for a stopped turn).
func (s *Stream) Completed(r *turn.Result) {
	if s.ended {
		return
	}
	s.ended = true
	if !s.started {
		s.Start(turn.Start{ThreadID: r.ThreadID, TurnID: r.TurnID, MessageID: r.Message.ID, UserMessageID: r.UserMessage.ID})
	}
	switch text := r.Message.Text; {
	case s.streamed == 0 && text != "":
		s.Delta(text, nil)
	case r.Status == turn.StatusStopped && len(text) > s.streamed:
		// A stopped turn's kept text begins with what was streamed.
		s.Delta(text[s.streamed:], nil)
	}
	s.closeText()
	for _, b := range r.Message.ContentBlocks {
		s.part(dataPart{Type: DataContentBlock, Data: b})
	}
	md := metadataPart{Type: "message-metadata"}
	md.MessageMetadata.Chatd = Metadata{
		ThreadID: r.ThreadID, TurnID: r.TurnID, MessageID: r.Message.ID, UserMessageID: r.UserMessage.ID,
		Meta: r.Message.Meta,
	}
	if md.MessageMetadata.Chatd.Meta == nil {
		md.MessageMetadata.Chatd.Meta = map[string]any{}
	}
	s.part(md)
	reason := "stop"
	if e, ok := protocol.ReadElicitation(r.Elicitation); ok && r.Status == turn.StatusInputRequired {
		s.part(toolPart{Type: "tool-input-start", ToolCallID: e.ID, ToolName: ToolName})
		s.part(toolPart{Type: "tool-input-available", ToolCallID: e.ID, ToolName: ToolName, Input: e.Params})
		reason = "tool-calls"
	}
	s.part(typePart{Type: "finish-step"})
	if r.Status == turn.StatusStopped {
		// useChat ends a stopped reply as it ends one it aborted itself.
		s.part(abortPart{Type: "abort", Reason: "stopped"})
	} else {
		s.part(finishPart{Type: "finish", FinishReason: reason})
	}
	s.write(Done)
}

// Error ends a failed turn with an error part; text is what the user is
// shown.
func (s *Stream) Error(text string) {
	if s.ended {
		return
	}
	s.ended = true
	s.closeText()
	s.part(errorPart{Type: "error", ErrorText: text})
	s.write(Done)
}

func (s *Stream) part(v any) {
	data, err := blocks.Marshal(v)
	if err != nil {
		// Every part is built from values that already went through the
		// same encoder as the turn's own events.
		data, _ = blocks.Marshal(errorPart{Type: "error", ErrorText: "internal error: " + err.Error()})
	}
	s.write(data)
}
