package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"chatd/internal/blocks"
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

// renderResult adds html to the messages of a TurnResult when the request
// asks for ?render=html (its handler has already refused a bad value);
// otherwise, and should rendering ever fail, the result is as it was.
func (s *Server) renderResult(r *http.Request, result []byte) []byte {
	if on, _ := wantsHTML(r); !on {
		return result
	}
	out, err := s.renderMembers(result, "user_message", "message")
	if err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelError, "rendering a turn result", slog.String("error", err.Error()))
		return result
	}
	return out
}

// renderMembers rewrites the named members of a JSON object, each a message
// record, as rendered messages; every other member, and the order of all of
// them, stays as it was.
func (s *Server) renderMembers(object []byte, names ...string) ([]byte, error) {
	var members []struct {
		key   string
		value json.RawMessage
	}
	dec := json.NewDecoder(bytes.NewReader(object))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		if slices.Contains(names, key) {
			var m blocks.Message
			if err := json.Unmarshal(value, &m); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if value, err = s.renderedMessage(m); err != nil {
				return nil, err
			}
		}
		members = append(members, struct {
			key   string
			value json.RawMessage
		}{key, value})
	}
	out := append(make([]byte, 0, len(object)+512), '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		key, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, key...), ':'), m.value...)
	}
	return append(out, '}'), nil
}
