// Package protocol holds what chatd's frontend protocols share: the error a
// request that cannot be read is reported with, the decoding of their
// requests (Decode, LastMessage) and the Answer to a paused turn they carry,
// data: URLs of media, and the reading of a paused turn's elicitation. The
// protocols themselves live in the sub-packages aisdk (Vercel AI SDK UI
// message streams), agui (AG-UI) and deepchat (the deep-chat web
// component); each maps a protocol's request onto a
// chatd turn and the turn's events onto the protocol's stream, and nothing
// else: the turn itself is internal/turn's.
package protocol

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

// InputError is a request a protocol cannot read: malformed, of the wrong
// shape, or asking for something chatd does not do. Detail is safe to show
// the client (the API answers 400 invalid_request with it).
type InputError struct {
	Detail string
}

func (e *InputError) Error() string { return e.Detail }

// Inputf returns an *InputError.
func Inputf(format string, args ...any) error {
	return &InputError{Detail: fmt.Sprintf(format, args...)}
}

// MediaBlock turns a media attachment — a data: URL and the media type the
// client declared for it — into an MCP image or audio block. Anything that
// is not an image or audio in a data: URL is a violation reported at path.
func MediaBlock(rawURL, mediaType, path string) (blocks.ContentBlock, error) {
	verr := &blocks.ValidationError{}
	urlType, data, err := parseDataURL(rawURL)
	if err != nil {
		verr.Add(path, err.Error())
		return blocks.ContentBlock{}, verr
	}
	if mediaType == "" {
		mediaType = urlType
	}
	var block blocks.ContentBlock
	switch {
	case strings.HasPrefix(mediaType, "image/"):
		block, err = blocks.Image(data, mediaType)
	case strings.HasPrefix(mediaType, "audio/"):
		block, err = blocks.Audio(data, mediaType)
	default:
		verr.Add(path, fmt.Sprintf("media type %q: only images and audio become content blocks", mediaType))
		return blocks.ContentBlock{}, verr
	}
	if err != nil {
		verr.Add(path, err.Error())
		return blocks.ContentBlock{}, verr
	}
	return block, nil
}

// parseDataURL reads an RFC 2397 data: URL into its media type and its data
// as standard base64 (percent-encoded data is re-encoded).
func parseDataURL(s string) (mediaType, data string, err error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return "", "", fmt.Errorf("must be a data: URL (chatd does not fetch attachments)")
	}
	header, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", fmt.Errorf("data: URL without a comma before its data")
	}
	params := strings.Split(header, ";")
	mediaType = strings.ToLower(strings.TrimSpace(params[0]))
	isBase64 := len(params) > 1 && strings.EqualFold(params[len(params)-1], "base64")
	if isBase64 {
		return mediaType, payload, nil
	}
	raw, err := url.PathUnescape(payload)
	if err != nil {
		return "", "", fmt.Errorf("data: URL: %v", err)
	}
	return mediaType, base64.StdEncoding.EncodeToString([]byte(raw)), nil
}

// Elicitation is a paused turn's question as the protocols show it: the MCP
// elicitation params, untouched, and the parts of it they name.
type Elicitation struct {
	// Params is the exact MCP elicitation/create params: {message,
	// requestedSchema, _meta}.
	Params json.RawMessage
	// ID is the elicitation's ID (_meta["drupal.org/ai.elicitation_id"]).
	ID      string
	Message string
	// Schema is requestedSchema, digit for digit.
	Schema json.RawMessage
	// Meta is the request's _meta, digit for digit.
	Meta json.RawMessage
	// Confirmation is set when the schema asks for no fields: the question
	// is a yes/no confirmation.
	Confirmation bool
	// URL is set for a URL-mode question (mode "url", bridged from an MCP
	// server): the page the user is asked to visit, and the server's
	// ElicitationID, if any. It has no Schema.
	URL           string
	ElicitationID string
}

// ReadElicitation reads a TurnResult's elicitation. ok is false when there is
// none (a completed turn) or it cannot be read.
func ReadElicitation(params json.RawMessage) (e Elicitation, ok bool) {
	if len(params) == 0 || string(params) == "null" {
		return Elicitation{}, false
	}
	var req struct {
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		Meta            json.RawMessage `json:"_meta"`
		URL             string          `json:"url"`
		ElicitationID   string          `json:"elicitationId"`
	}
	if json.Unmarshal(params, &req) != nil {
		return Elicitation{}, false
	}
	var ids map[string]json.RawMessage
	_ = json.Unmarshal(req.Meta, &ids)
	var id string
	_ = json.Unmarshal(ids[blocks.MetaElicitationID], &id)
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(req.RequestedSchema, &schema)
	if req.Mode == elicit.ModeURL {
		return Elicitation{Params: params, ID: id, Message: req.Message, Meta: req.Meta, URL: req.URL, ElicitationID: req.ElicitationID}, id != ""
	}
	return Elicitation{
		Params: params, ID: id, Message: req.Message, Schema: req.RequestedSchema, Meta: req.Meta,
		Confirmation: len(schema.Properties) == 0,
	}, id != ""
}

// Prefixed puts a *blocks.ValidationError's violations under path (another
// error becomes one violation at path).
func Prefixed(err error, path string) error {
	verr, ok := err.(*blocks.ValidationError)
	if !ok {
		return &blocks.ValidationError{Errors: []blocks.FieldError{{Field: path, Detail: err.Error()}}}
	}
	out := &blocks.ValidationError{}
	for _, fe := range verr.Errors {
		out.Add(blocks.JoinPath(path, fe.Field), fe.Detail)
	}
	return out
}
