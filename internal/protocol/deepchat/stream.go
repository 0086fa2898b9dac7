package deepchat

import (
	"html"

	"chatd/internal/blocks"
	"chatd/internal/render"
	"chatd/internal/turn"
)

// Answer is deep-chat's response body: the reply's html, or the error it
// shows. Overwrite marks a stream's last event, whose html replaces the
// deltas before it.
type Answer struct {
	HTML      string `json:"html,omitempty"`
	Overwrite bool   `json:"overwrite,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Reply renders a turn's result as the html of its reply: the text, the
// blocks, the suggested replies and the question it asks.
func Reply(rr *render.Renderer, r *turn.Result) (string, error) {
	var q *render.Question
	if r.Status == turn.StatusInputRequired {
		q = Question(r.Elicitation)
	}
	return rr.DeepChat(r.Message, q)
}

// Stream writes one turn as deep-chat stream events. Its methods are called
// in the turn's event order (Delta…, then Completed or Error) and not
// concurrently; write receives each event's JSON, one SSE data line, and
// must copy what it keeps of it.
type Stream struct {
	write    func(data []byte)
	renderer *render.Renderer
	scratch  []byte
	ended    bool
}

// NewStream returns a Stream writing to write, rendering with rr.
func NewStream(write func(data []byte), rr *render.Renderer) *Stream {
	return &Stream{write: write, renderer: rr}
}

// Start is the turn's first event, which deep-chat has no use for.
func (s *Stream) Start(turn.Start) {}

// Delta streams a piece of the reply's text, escaped.
func (s *Stream) Delta(text string, _ map[string]any) {
	if text == "" || s.ended {
		return
	}
	// Deltas are most of a stream: built by hand, without an encoder each.
	b := append(s.scratch[:0], `{"html":`...)
	b = blocks.AppendString(b, html.EscapeString(text))
	s.scratch = append(b, '}')
	s.write(s.scratch)
}

// Completed replaces what was streamed with the whole reply, rendered.
func (s *Stream) Completed(r *turn.Result) {
	if s.ended {
		return
	}
	out, err := Reply(s.renderer, r)
	if err != nil {
		s.Error("the reply could not be shown: " + err.Error())
		return
	}
	s.ended = true
	s.event(Answer{HTML: out, Overwrite: true})
}

// Error ends the stream with the error deep-chat shows; text is what the
// user is shown.
func (s *Stream) Error(text string) {
	if s.ended {
		return
	}
	s.ended = true
	s.event(Answer{Error: text})
}

func (s *Stream) event(a Answer) {
	data, err := blocks.Marshal(a)
	if err != nil {
		data = []byte(`{"error":"internal error"}`)
	}
	s.write(data)
}
