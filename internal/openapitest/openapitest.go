// Package openapitest checks, in tests, that chatd's HTTP responses are what
// its OpenAPI document (chatd.OpenAPI, served at /openapi.yaml) says they are:
// a documented operation, a documented status, a documented content type and a
// body matching the schema. Tests of the API and end-to-end tests run every
// response that matters to clients through a Validator, so the document cannot
// drift from the code.
//
// The document is an OpenAPI 3.1 one; bodies are validated with JSON Schema
// 2020-12 semantics (kin-openapi's openapi3filter enables them for 3.1
// documents), so `type: [string, "null"]`, `const`, `propertyNames` and
// `if`/`then` all constrain responses.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"chatd"
)

// eventsExtension is the media-type extension of the streamed TurnResult
// response that maps each Server-Sent Event name to the schema of its data.
const eventsExtension = "x-sse-events"

// Validator checks responses against chatd's OpenAPI document. It is safe for
// concurrent use; one is shared by every test of a process.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	// events maps an SSE event name to the schema of its data.
	events map[string]*openapi3.SchemaRef
	// formats are the string formats asserted beyond kin-openapi's defaults.
	formats []openapi3.SchemaValidationOption
}

var (
	loadOnce   sync.Once
	loaded     *Validator
	errLoading error
)

// New returns the Validator for chatd.OpenAPI, loading and validating the
// document on first use. It fails tb when the document does not load.
func New(tb testing.TB) *Validator {
	tb.Helper()
	loadOnce.Do(func() { loaded, errLoading = load(chatd.OpenAPI) })
	if errLoading != nil {
		tb.Fatalf("openapitest: %v", errLoading)
	}
	return loaded
}

// load parses and validates an OpenAPI document and builds its router.
func load(data []byte) (*Validator, error) {
	ctx := context.Background()
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	// The document names one local server, but tests listen on whatever
	// loopback port httptest picks: without servers the router matches on the
	// path alone, whatever the host and port.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("build router: %w", err)
	}
	events, err := streamEvents(doc)
	if err != nil {
		return nil, err
	}
	return &Validator{
		doc:    doc,
		router: router,
		events: events,
		formats: []openapi3.SchemaValidationOption{
			// kin-openapi asserts uuid only when asked to; chatd's IDs are
			// UUIDs (v7), and a malformed one is a bug worth catching.
			openapi3.WithStringFormatValidator("uuid",
				openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC9562)),
			// The reason names the failing path and keyword; the default
			// message adds the whole (resolved) schema and value, which for a
			// TurnResult buries it under pages of JSON.
			openapi3.SetSchemaErrorMessageCustomizer(schemaErrorReason),
		},
	}, nil
}

// streamEvents reads the event-name → schema map the document declares on the
// streamed TurnResult response.
func streamEvents(doc *openapi3.T) (map[string]*openapi3.SchemaRef, error) {
	resp := doc.Components.Responses["TurnResult"]
	if resp == nil || resp.Value == nil {
		return nil, errors.New("openapi.yaml: components.responses.TurnResult is missing")
	}
	mt := resp.Value.Content.Get("text/event-stream")
	if mt == nil {
		return nil, errors.New("openapi.yaml: TurnResult has no text/event-stream content")
	}
	raw, ok := mt.Extensions[eventsExtension].(map[string]any)
	if !ok || len(raw) == 0 {
		return nil, fmt.Errorf("openapi.yaml: TurnResult text/event-stream has no %s map", eventsExtension)
	}
	events := make(map[string]*openapi3.SchemaRef, len(raw))
	for name, ref := range raw {
		s, _ := ref.(string)
		schema := doc.Components.Schemas[strings.TrimPrefix(s, "#/components/schemas/")]
		if !strings.HasPrefix(s, "#/components/schemas/") || schema == nil {
			return nil, fmt.Errorf("openapi.yaml: %s: event %q names no component schema (%v)", eventsExtension, name, ref)
		}
		events[name] = schema
	}
	return events, nil
}

// ValidateResponse fails tb, with a message saying what differs, when a
// response to req does not match the document: the request must match a
// documented operation (a request that matches none must have been answered
// 404 not_found, or 405 method_not_allowed for a known path), status must be
// documented for it, the Content-Type must be one documented for that status,
// and the body must match its schema. Bodies of text/event-stream and
// text/plain (and text/javascript) responses are not checked; use ValidateEvent for stream events.
// A 200 from a streaming operation must be a stream exactly when req's Accept
// asks for one.
func (v *Validator) ValidateResponse(tb testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	tb.Helper()
	if req == nil {
		tb.Errorf("openapitest: response %d has no request to validate it against", status)
		return
	}
	if err := v.validateResponse(req, status, header, body); err != nil {
		tb.Errorf("openapitest: %s %s → %d (%s) does not match openapi.yaml:\n%v\nbody: %s",
			req.Method, req.URL.RequestURI(), status, header.Get("Content-Type"), err, excerpt(body))
	}
}

// Check reads resp.Body, restores it so the caller can read it again, and
// validates the response against resp.Request as ValidateResponse does. It
// returns the body. For a stream it reads until the stream ends.
func (v *Validator) Check(tb testing.TB, resp *http.Response) []byte {
	tb.Helper()
	if resp == nil {
		tb.Errorf("openapitest: nil response")
		return nil
	}
	var body []byte
	if resp.Body != nil {
		var err error
		body, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			tb.Errorf("openapitest: read response body: %v", err)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	v.ValidateResponse(tb, resp.Request, resp.StatusCode, resp.Header, body)
	return body
}

// ValidateEvent fails tb when data is not valid data for the Server-Sent Event
// named event: message.start (MessageStartEvent), text.delta (TextDeltaEvent),
// turn.completed (TurnResult) or error (Problem), as the document declares.
func (v *Validator) ValidateEvent(tb testing.TB, event string, data []byte) {
	tb.Helper()
	schema, ok := v.events[event]
	if !ok {
		tb.Errorf("openapitest: stream event %q is not documented (documented: %s)", event, strings.Join(sortedKeys(v.events), ", "))
		return
	}
	if err := v.visit(schema, data); err != nil {
		tb.Errorf("openapitest: data of stream event %q does not match openapi.yaml:\n%v\ndata: %s", event, err, excerpt(data))
	}
}

// ValidateSchema fails tb when data is not a valid instance of the named
// component schema (components.schemas.<name>), e.g. "Message" or
// "ContentBlock".
func (v *Validator) ValidateSchema(tb testing.TB, name string, data []byte) {
	tb.Helper()
	schema := v.doc.Components.Schemas[name]
	if schema == nil {
		tb.Errorf("openapitest: openapi.yaml has no schema %q", name)
		return
	}
	if err := v.visit(schema, data); err != nil {
		tb.Errorf("openapitest: value does not match schema %s of openapi.yaml:\n%v\nvalue: %s", name, err, excerpt(data))
	}
}

func (v *Validator) visit(schema *openapi3.SchemaRef, data []byte) error {
	// Numbers are decoded as written: chatd keeps free-form values such as
	// 1e400 exactly, which a float64 cannot even hold.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	opts := append([]openapi3.SchemaValidationOption{openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()}, v.formats...)
	return schema.Value.VisitJSON(value, opts...)
}

func (v *Validator) validateResponse(req *http.Request, status int, header http.Header, body []byte) error {
	ctx := context.Background()
	// The router reads only the method and the URL; a clone keeps the
	// caller's request (and its possibly consumed body) untouched.
	r := req.Clone(ctx)
	r.Body = http.NoBody
	route, params, err := v.router.FindRoute(r)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		return v.validateUnrouted(http.StatusNotFound, unroutedResponse(req, "NotFound"), "no documented path matches", status, header, body)
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return v.validateUnrouted(http.StatusMethodNotAllowed, unroutedResponse(req, "MethodNotAllowed"), "the path is documented but not this method", status, header, body)
	case err != nil:
		return fmt.Errorf("find operation: %w", err)
	}

	respRef := route.Operation.Responses.Status(status)
	if respRef == nil || respRef.Value == nil {
		return fmt.Errorf("status %d is not documented for operation %s (documented: %s)",
			status, route.Operation.OperationID, strings.Join(documentedStatuses(route.Operation), ", "))
	}
	content := respRef.Value.Content
	ct := header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(ct)
	skipBody := false
	if len(content) > 0 {
		if content.Get(ct) == nil {
			return fmt.Errorf("content type %q is not documented for status %d of operation %s (documented: %s)",
				ct, status, route.Operation.OperationID, strings.Join(sortedKeys(content), ", "))
		}
		skipBody = mediaType == "text/event-stream" || mediaType == "text/plain" || mediaType == "application/openmetrics-text" ||
			mediaType == "text/javascript"
		if err := checkNegotiation(req, status, content, mediaType); err != nil {
			return err
		}
	}

	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      route,
		},
		Status: status,
		Header: header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			ExcludeResponseBody:   skipBody,
			MultiError:            true,
			// openapi3filter enables JSON Schema 2020-12 itself for 3.1 documents.
			SchemaValidationOptions: v.formats,
		},
	}
	input.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(ctx, input)
}

// checkNegotiation holds a negotiating operation's 200 (JSON or a stream) to
// the request's Accept: a stream when Accept names only text/event-stream,
// JSON when it does not name it at all. Mixed Accept headers may get either.
func checkNegotiation(req *http.Request, status int, content openapi3.Content, mediaType string) error {
	if status != http.StatusOK || content.Get("text/event-stream") == nil || len(content) == 1 {
		// Nothing to negotiate: the operation answers only as a stream.
		return nil
	}
	ranges := acceptedTypes(req.Header.Get("Accept"))
	wantsStream := slices.Contains(ranges, "text/event-stream")
	onlyStream := wantsStream && len(ranges) == 1
	isStream := mediaType == "text/event-stream"
	switch {
	case onlyStream && !isStream:
		return fmt.Errorf("the request asked for text/event-stream (Accept: %q) but the response is %q", req.Header.Get("Accept"), mediaType)
	case !wantsStream && isStream:
		return fmt.Errorf("the response is a stream but the request did not ask for one (Accept: %q)", req.Header.Get("Accept"))
	}
	return nil
}

// acceptedTypes returns the media ranges of an Accept header that are not
// refused with q=0, lowercased, without parameters.
func acceptedTypes(accept string) []string {
	var out []string
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if q, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
				continue
			}
		}
		out = append(out, mt)
	}
	return out
}

// validateUnrouted checks the answer to a request no documented operation
// matches: chatd must answer it with the problem the document describes in
// components.responses.<responseName>.
// unroutedResponse names the response a request no operation takes must
// get: deep-chat's paths answer every error in deep-chat's own shape.
func unroutedResponse(req *http.Request, name string) string {
	if p := req.URL.Path; p == "/v1/deep-chat" || strings.HasPrefix(p, "/v1/deep-chat/") {
		return "DeepChatError"
	}
	return name
}

func (v *Validator) validateUnrouted(wantStatus int, responseName, why string, status int, header http.Header, body []byte) error {
	if status != wantStatus {
		return fmt.Errorf("%s, so the response must be %d; got %d", why, wantStatus, status)
	}
	resp := v.doc.Components.Responses[responseName]
	if resp == nil || resp.Value == nil {
		return fmt.Errorf("openapi.yaml: components.responses.%s is missing", responseName)
	}
	ct := header.Get("Content-Type")
	mt := resp.Value.Content.Get(ct)
	if mt == nil || mt.Schema == nil {
		return fmt.Errorf("%s: content type %q is not documented for it (documented: %s)", why, ct, strings.Join(sortedKeys(resp.Value.Content), ", "))
	}
	if err := v.visit(mt.Schema, body); err != nil {
		return fmt.Errorf("%s: body does not match components.responses.%s: %w", why, responseName, err)
	}
	return nil
}

func schemaErrorReason(err *openapi3.SchemaError) string {
	return err.Reason
}

func documentedStatuses(op *openapi3.Operation) []string {
	return sortedKeys(op.Responses.Map())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// excerpt bounds how much of a body a failure message quotes.
func excerpt(body []byte) string {
	const limit = 2048
	if len(body) > limit {
		return string(body[:limit]) + "…"
	}
	return string(body)
}
