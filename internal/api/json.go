package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"

	"chatd/internal/blocks"
)

// writeJSON encodes v into a buffer first, so a failed encode never leaves a
// half-written 200, then writes it with status.
func writeJSON(w http.ResponseWriter, status int, contentType string, v any) error {
	body, err := marshal(v)
	if err != nil {
		return err
	}
	writeBody(w, status, contentType, body)
	return nil
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshal encodes v as chatd writes every JSON body.
func marshal(v any) ([]byte, error) { return blocks.Marshal(v) }

const jsonType = "application/json"

// errClientGone marks a request whose client went away before it was
// answered: it is logged and counted as 499, not as a server error.
var errClientGone = errors.New("the client went away")

// readBody reads a JSON request body, bounded by CHATD_MAX_BODY_BYTES and
// CHATD_MAX_JSON_DEPTH. An empty body is returned as nil when allowEmpty;
// otherwise the content type must be JSON.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, allowEmpty bool) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, bodyReadError(err, limit)
	}
	if len(bytes.TrimSpace(body)) == 0 && allowEmpty {
		// A body-less request needs no content type; one that names a
		// type must name JSON, so a cross-site form or text/plain post (a
		// browser's simple request) is refused like any other non-JSON.
		if r.Header.Get("Content-Type") != "" {
			if err := requireJSON(r); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	if err := checkDepth(body, s.cfg.MaxJSONDepth); err != nil {
		return nil, err
	}
	return body, nil
}

// bodyReadError is what a request body that failed to arrive, under a
// limit of limit bytes, answers.
func bodyReadError(err error, limit int64) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errorf(http.StatusRequestEntityTooLarge, "payload_too_large", "request body exceeds %d bytes", limit)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		// CHATD_READ_TIMEOUT passed, or the server is shutting down.
		return errorf(http.StatusRequestTimeout, "request_timeout", "the request body did not arrive in time")
	}
	// Anything else that stops a body from arriving is the connection
	// failing under it: the client is gone.
	return fmt.Errorf("reading the request body: %w: %w", errClientGone, err)
}

func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil || (mediaType != jsonType && !strings.HasSuffix(mediaType, "+json")) {
		return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
	}
	return nil
}

// The shapes of the request bodies, named in every 400 detail so a client
// learns what was expected, not only what was wrong.
const (
	turnShape       = "a turn is {message, content_blocks?, _meta?, parent_id?, stop_on_disconnect?, cancel_pending?}"
	regenerateShape = "a regenerate is {stop_on_disconnect?} or an empty body"
	cancelShape     = "a stop is {turn_id?} or an empty body"
	answerShape     = "an answer is {action, content?, _meta?}"
	threadShape     = "a new thread is {processor?} or an empty body"
	patchShape      = "a thread update is {title?, metadata?, head_id?}"
)

// badShape is a 400 whose detail names what was wrong and the expected shape.
func badShape(shape, format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, "invalid_request", "%s: %s", fmt.Sprintf(format, args...), shape)
}

// decodeStrict decodes exactly one JSON value into v: unknown fields, wrong
// types and trailing data are errors whose detail names shape, and numbers
// stay json.Number so integers and decimals are validated as the client
// wrote them.
func decodeStrict(body []byte, v any, shape string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return badShape(shape, "%s", describeDecodeError(err))
	}
	if dec.More() {
		return badShape(shape, "malformed JSON body: unexpected data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return badShape(shape, "malformed JSON body: unexpected data after the JSON value")
	}
	return nil
}

func describeDecodeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("%s: must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return fmt.Sprintf("body must be a JSON object, not %s", typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("malformed JSON body: %s (at byte %d)", syntaxErr.Error(), syntaxErr.Offset)
	case errors.Is(err, io.EOF):
		return "malformed JSON body: empty body"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON body: unexpected end of JSON"
	}
	// encoding/json reports unknown fields as `json: unknown field "x"`.
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	default:
		return "a " + goKind
	}
}
