package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"

	"chatd/internal/blocks"
	"chatd/internal/turn"
)

// wantsHTML reads the render query parameter: absent is false, "html" is
// true, anything else is a 400.
func wantsHTML(r *http.Request) (bool, error) {
	raw, ok := r.URL.Query()["render"]
	if !ok {
		return false, nil
	}
	if len(raw) != 1 || raw[0] != "html" {
		return false, errorf(http.StatusBadRequest, "invalid_request", "render: the only value is html")
	}
	return true, nil
}

// renderedMessage is a message record with an "html" member added after its
// own, which stay exactly as they are without ?render=html.
func (s *Server) renderedMessage(m blocks.Message) (json.RawMessage, error) {
	data, err := marshal(m)
	if err != nil {
		return nil, err
	}
	htmlText, err := s.renderer.Message(m)
	if err != nil {
		return nil, err
	}
	htmlJSON, err := marshal(htmlText)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(data)+len(htmlJSON)+9)
	out = append(out, bytes.TrimSuffix(data, []byte("}"))...)
	out = append(out, `,"html":`...)
	out = append(out, htmlJSON...)
	return append(out, '}'), nil
}

// renderedMessages is renderedMessage for each of msgs.
func (s *Server) renderedMessages(msgs []blocks.Message) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		var err error
		if out[i], err = s.renderedMessage(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resultJSON is a turn.completed event's TurnResult as the client reads
// it: with html added to its messages when the request asks for
// ?render=html (its handler has already refused a bad value); otherwise,
// and should rendering ever fail, as the turn gave it.
func (s *Server) resultJSON(r *http.Request, ev turn.Event) []byte {
	if on, _ := wantsHTML(r); !on {
		return ev.Data()
	}
	out, err := s.renderedResult(ev.Result)
	if err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelError, "rendering a turn result", slog.String("error", err.Error()))
		return ev.Data()
	}
	return out
}

// renderedResult is a TurnResult whose messages carry their html.
func (s *Server) renderedResult(res *turn.Result) ([]byte, error) {
	user, err := s.renderedMessage(res.UserMessage)
	if err != nil {
		return nil, err
	}
	reply, err := s.renderedMessage(res.Message)
	if err != nil {
		return nil, err
	}
	return marshal(turn.WithMessages(res, user, reply))
}
