package openapitest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd"
	"chatd/internal/openapitest"
)

// recorder is a testing.TB that records failures instead of failing the test,
// so the tests can assert that the Validator does fail on a bad response.
type recorder struct {
	testing.TB // nil: only the methods below are called

	mu       sync.Mutex
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// reasons returns the recorded failures without the response bodies they
// quote, so a test can only match what the Validator said was wrong.
func (r *recorder) reasons() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.failures))
	for i, f := range r.failures {
		for _, quote := range []string{"\nbody: ", "\ndata: ", "\nvalue: "} {
			if j := strings.LastIndex(f, quote); j >= 0 {
				f = f[:j]
			}
		}
		out[i] = f
	}
	return strings.Join(out, "\n")
}

// run calls f with a fresh recorder on its own goroutine, as testing does, so
// that Fatalf can end it, and returns the reasons of the failures f recorded.
func run(f func(tb testing.TB)) string {
	rec := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(rec)
	}()
	<-done
	return rec.reasons()
}

const (
	threadID      = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00"
	elicitationID = "3f1c2b4a-9d8e-4c7b-a6f5-1e2d3c4b5a69"
)

func userMessage() map[string]any {
	return map[string]any{
		"id":        "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10",
		"role":      "user",
		"message":   "Which Drupal version added Single Directory Components?",
		"timestamp": "2025-06-01T10:00:00.000Z",
	}
}

func citationBlocks() []any {
	return []any{
		map[string]any{"type": "text", "text": ""},
		map[string]any{
			"type":        "resource_link",
			"uri":         "https://www.drupal.org/docs/develop/theming-drupal/using-single-directory-components",
			"name":        "using-single-directory-components",
			"size":        0,
			"annotations": map[string]any{"audience": []any{"user"}, "priority": 0, "lastModified": "2025-05-01T08:00:00+02:00"},
			"x-unknown":   "preserved",
		},
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///notes.txt", "text": "notes"}},
		map[string]any{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
		map[string]any{"type": "audio", "data": "", "mimeType": "audio/wav"},
	}
}

func completedTurn() map[string]any {
	meta := map[string]any{"drupal.org/ai.citations": []any{map[string]any{"index": 1}}}
	return map[string]any{
		"thread_id":    threadID,
		"turn_id":      "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a0f",
		"status":       "completed",
		"user_message": userMessage(),
		"message": map[string]any{
			"id":             "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a11",
			"role":           "assistant",
			"message":        "Drupal 10.1 [1].",
			"timestamp":      "2025-06-01T10:00:02.123Z",
			"content_blocks": citationBlocks(),
			"_meta":          meta,
		},
		"structured_response":    map[string]any{"content_blocks": citationBlocks(), "_meta": meta},
		"elicitation":            nil,
		"elicitation_expires_at": nil,
		"a_field_added_later":    true,
	}
}

func elicitationRequest() map[string]any {
	return map[string]any{
		"message": "Tell me more",
		"requestedSchema": map[string]any{
			"type":    "object",
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"properties": map[string]any{
				"email":  map[string]any{"type": "string", "format": "email", "minLength": 3, "maxLength": 100},
				"age":    map[string]any{"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
				"ok":     map[string]any{"type": "boolean", "default": false},
				"color":  map[string]any{"type": "string", "enum": []any{"red", "blue"}},
				"size":   map[string]any{"type": "string", "oneOf": []any{map[string]any{"const": "s", "title": "Small"}}},
				"legacy": map[string]any{"type": "string", "enum": []any{"a"}, "enumNames": []any{"A"}},
				"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"x", "y"}}, "minItems": 1},
				"titled": map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{map[string]any{"const": "x", "title": "X"}}}},
			},
			"required": []any{"email"},
		},
		"_meta": map[string]any{
			"drupal.org/ai.elicitation_id": elicitationID,
			"drupal.org/ai.widgets":        map[string]any{"email": map[string]any{"widget": "email"}},
		},
	}
}

func pausedTurn() map[string]any {
	m := completedTurn()
	m["status"] = "input_required"
	m["structured_response"] = map[string]any{"content_blocks": []any{}, "_meta": map[string]any{}}
	m["elicitation"] = elicitationRequest()
	m["elicitation_expires_at"] = "2025-06-01T10:15:02.000Z"
	return m
}

func problem(status int, code string) map[string]any {
	return map[string]any{
		"type":   "urn:chatd:problem:" + code,
		"title":  "Something",
		"status": status,
		"detail": "what went wrong",
		"code":   code,
	}
}

func thread() map[string]any {
	return map[string]any{
		"id":                  threadID,
		"processor":           "echo",
		"created_at":          "2025-06-01T10:00:00.000Z",
		"updated_at":          "2025-06-01T10:00:00.000Z",
		"title":               nil,
		"metadata":            map[string]any{},
		"running_turn":        nil,
		"pending_elicitation": nil,
		"pending_expires_at":  nil,
	}
}

// response is what the test server answers one case with.
type response struct {
	status int
	header map[string]string
	body   any // marshaled as JSON unless it is a string
}

func jsonResponse(status int, body any) response {
	return response{status: status, header: map[string]string{"Content-Type": "application/json"}, body: body}
}

func problemResponse(p map[string]any) response {
	return response{status: p["status"].(int), header: map[string]string{"Content-Type": "application/problem+json"}, body: p}
}

func with(m map[string]any, edit func(m map[string]any)) map[string]any {
	edit(m)
	return m
}

// newTestServer serves resp to every request, as a chatd that behaves that way would.
func newTestServer(tb testing.TB, resp response) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range resp.header {
			w.Header().Set(k, v)
		}
		var body []byte
		switch b := resp.body.(type) {
		case nil:
		case string:
			body = []byte(b)
		case []byte:
			body = b
		default:
			var err error
			body, err = json.Marshal(b)
			if err != nil {
				panic(err)
			}
		}
		w.WriteHeader(resp.status)
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

func mustDo(tb testing.TB, srv *httptest.Server, method, path, accept string) *http.Response {
	tb.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(`{"message":"hi"}`))
	require.NoError(tb, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	ctx := context.Background()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(chatd.OpenAPI)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(ctx))
	assert.True(t, doc.IsOpenAPI31OrLater())
	require.Len(t, doc.Servers, 1)
	assert.Equal(t, "http://127.0.0.1:8080", doc.Servers[0].URL)

	// Every endpoint of the contract, with the statuses a client must be ready for.
	tests := []struct {
		method, path string
		statuses     []string
		public       bool
	}{
		{"GET", "/v1/processors", []string{"200", "401", "500"}, false},
		{"GET", "/v1/threads", []string{"200", "400", "401", "500", "503"}, false},
		{"POST", "/v1/threads", []string{"201", "400", "401", "413", "415", "422", "500", "503"}, false},
		{"GET", "/v1/threads/{thread_id}", []string{"200", "401", "404", "500", "503"}, false},
		{"PATCH", "/v1/threads/{thread_id}", []string{"200", "400", "401", "404", "413", "415", "422", "500", "503"}, false},
		{"GET", "/v1/threads/{thread_id}/turns/{turn_id}/events", []string{"200", "400", "401", "404", "500", "503"}, false},
		{"DELETE", "/v1/threads/{thread_id}", []string{"204", "401", "404", "500", "503"}, false},
		{"POST", "/v1/threads/{thread_id}/turns", []string{"200", "400", "401", "404", "409", "413", "415", "422", "500", "502", "503"}, false},
		{"GET", "/v1/threads/{thread_id}/messages", []string{"200", "400", "401", "404", "500", "503"}, false},
		{"POST", "/v1/threads/{thread_id}/elicitations/{elicitation_id}", []string{"200", "400", "401", "404", "409", "410", "413", "415", "422", "500", "502", "503"}, false},
		{"GET", "/healthz", []string{"200"}, true},
		{"GET", "/readyz", []string{"200", "503"}, true},
		{"GET", "/metrics", []string{"200"}, true},
		{"GET", "/openapi.yaml", []string{"200"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			item := doc.Paths.Find(tt.path)
			require.NotNil(t, item, "path not documented")
			op := item.GetOperation(tt.method)
			require.NotNil(t, op, "method not documented")
			assert.NotEmpty(t, op.OperationID)
			for _, s := range tt.statuses {
				assert.NotNil(t, op.Responses.Status(mustAtoi(t, s)), "status %s not documented", s)
			}
			if tt.public {
				require.NotNil(t, op.Security, "public endpoint must override security")
				assert.Empty(t, *op.Security)
			} else {
				assert.Nil(t, op.Security, "/v1 endpoints use the document's security")
			}
		})
	}
}

func mustAtoi(tb testing.TB, s string) int {
	tb.Helper()
	var n int
	_, err := fmt.Sscanf(s, "%d", &n)
	require.NoError(tb, err)
	return n
}

func TestValidateResponse(t *testing.T) {
	v := openapitest.New(t)
	turns := "/v1/threads/" + threadID + "/turns"
	answer := "/v1/threads/" + threadID + "/elicitations/" + elicitationID
	sse := "id: 1\nevent: message.start\ndata: {}\n\n"

	tests := []struct {
		name         string
		method, path string
		accept       string
		resp         response
		wantFailure  string // empty: the response must pass
	}{
		{name: "completed turn", method: "POST", path: turns, resp: jsonResponse(200, completedTurn())},
		{name: "paused turn", method: "POST", path: turns, resp: jsonResponse(200, pausedTurn())},
		{name: "resumed turn", method: "POST", path: answer, resp: jsonResponse(200, completedTurn())},
		{name: "turn as stream", method: "POST", path: turns, accept: "text/event-stream",
			resp: response{status: 200, header: map[string]string{"Content-Type": "text/event-stream"}, body: sse}},
		{name: "turn with charset parameter", method: "POST", path: turns,
			resp: response{status: 200, header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, body: completedTurn()}},
		{name: "processors", method: "GET", path: "/v1/processors", resp: jsonResponse(200, map[string]any{
			"processors": []any{map[string]any{"name": "echo", "description": "Echo"}}, "default": "echo"})},
		{name: "created thread", method: "POST", path: "/v1/threads",
			resp: response{status: 201, header: map[string]string{"Content-Type": "application/json", "Location": "/v1/threads/" + threadID}, body: thread()}},
		{name: "thread with pending elicitation", method: "GET", path: "/v1/threads/" + threadID, resp: jsonResponse(200, with(thread(), func(m map[string]any) {
			m["pending_elicitation"] = elicitationRequest()
			m["pending_expires_at"] = "2025-06-01T10:15:02.000Z"
		}))},
		{name: "deleted thread", method: "DELETE", path: "/v1/threads/" + threadID, resp: response{status: 204}},
		{name: "history page", method: "GET", path: "/v1/threads/" + threadID + "/messages?limit=2", resp: jsonResponse(200, map[string]any{
			"messages": []any{userMessage()}, "next_before": nil})},
		{name: "elicitation pending problem", method: "POST", path: turns, resp: problemResponse(with(problem(409, "elicitation_pending"), func(m map[string]any) {
			m["elicitation"] = elicitationRequest()
			m["elicitation_expires_at"] = "2025-06-01T10:15:02.000Z"
		}))},
		{name: "validation problem", method: "POST", path: answer, resp: problemResponse(with(problem(422, "validation_failed"), func(m map[string]any) {
			m["errors"] = []any{map[string]any{"field": "email", "detail": "is required"}}
		}))},
		{name: "elicitation not found", method: "POST", path: answer, resp: problemResponse(problem(404, "elicitation_not_found"))},
		{name: "unknown route answered 404", method: "GET", path: "/v2/nothing", resp: problemResponse(problem(404, "not_found"))},
		{name: "wrong method answered 405", method: "PUT", path: "/v1/threads", resp: problemResponse(problem(405, "method_not_allowed"))},
		{name: "readyz down", method: "GET", path: "/readyz", resp: problemResponse(problem(503, "store_unavailable"))},
		{name: "healthz", method: "GET", path: "/healthz", resp: jsonResponse(200, map[string]any{"status": "ok"})},
		{name: "metrics", method: "GET", path: "/metrics",
			resp: response{status: 200, header: map[string]string{"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}, body: "# HELP x\nx 1\n"}},
		{name: "openapi document", method: "GET", path: "/openapi.yaml",
			resp: response{status: 200, header: map[string]string{"Content-Type": "application/yaml"}, body: chatd.OpenAPI}},

		{name: "turn without structured_response", method: "POST", path: turns, wantFailure: "structured_response",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) { delete(m, "structured_response") }))},
		{name: "null structured_response", method: "POST", path: turns, wantFailure: "structured_response",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) { m["structured_response"] = nil }))},
		{name: "completed turn without elicitation key", method: "POST", path: turns, wantFailure: "elicitation",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) { delete(m, "elicitation") }))},
		{name: "message with an unknown key", method: "POST", path: turns, wantFailure: "extra",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) { m["user_message"].(map[string]any)["extra"] = 1 }))},
		{name: "message ID not a UUID", method: "POST", path: turns, wantFailure: "uuid",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) { m["user_message"].(map[string]any)["id"] = "msg-1" }))},
		{name: "timestamp not RFC 3339", method: "POST", path: turns, wantFailure: "date-time",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) { m["user_message"].(map[string]any)["timestamp"] = "yesterday" }))},
		{name: "block of unknown type", method: "POST", path: turns, wantFailure: "content_blocks",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) {
				m["structured_response"].(map[string]any)["content_blocks"] = []any{map[string]any{"type": "video", "text": "x"}}
			}))},
		{name: "priority out of range", method: "POST", path: turns, wantFailure: "priority",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) {
				m["structured_response"].(map[string]any)["content_blocks"] = []any{map[string]any{"type": "text", "text": "x", "annotations": map[string]any{"priority": 1.5}}}
			}))},
		{name: "resource with text and blob", method: "POST", path: turns, wantFailure: "resource",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) {
				m["structured_response"].(map[string]any)["content_blocks"] = []any{map[string]any{"type": "resource", "resource": map[string]any{"uri": "a:b", "text": "t", "blob": "AA=="}}}
			}))},
		{name: "meta key against the grammar", method: "POST", path: turns, wantFailure: "drupal.org/ai/citations",
			resp: jsonResponse(200, with(completedTurn(), func(m map[string]any) {
				m["structured_response"].(map[string]any)["_meta"] = map[string]any{"drupal.org/ai/citations": []any{}}
			}))},
		{name: "elicitation with mode", method: "POST", path: turns, wantFailure: "mode",
			resp: jsonResponse(200, with(pausedTurn(), func(m map[string]any) { m["elicitation"].(map[string]any)["mode"] = "form" }))},
		{name: "elicitation without its ID", method: "POST", path: turns, wantFailure: "drupal.org/ai.elicitation_id",
			resp: jsonResponse(200, with(pausedTurn(), func(m map[string]any) { m["elicitation"].(map[string]any)["_meta"] = map[string]any{} }))},
		{name: "nested object in requested schema", method: "POST", path: turns, wantFailure: "requestedSchema",
			resp: jsonResponse(200, with(pausedTurn(), func(m map[string]any) {
				m["elicitation"].(map[string]any)["requestedSchema"].(map[string]any)["properties"] = map[string]any{"o": map[string]any{"type": "object"}}
			}))},
		{name: "problem without code", method: "POST", path: turns, wantFailure: "code",
			resp: problemResponse(with(problem(409, "thread_busy"), func(m map[string]any) { delete(m, "code") }))},
		{name: "problem code not allowed for its status", method: "GET", path: "/v1/threads/" + threadID, wantFailure: "code",
			resp: problemResponse(problem(404, "invalid_request"))},
		{name: "validation problem without errors", method: "POST", path: answer, wantFailure: "errors",
			resp: problemResponse(problem(422, "validation_failed"))},
		{name: "elicitation pending problem without elicitation", method: "POST", path: turns, wantFailure: "elicitation",
			resp: problemResponse(problem(409, "elicitation_pending"))},
		{name: "problem as application/json", method: "POST", path: turns, wantFailure: "content type",
			resp: jsonResponse(409, problem(409, "thread_busy"))},
		{name: "undocumented status", method: "POST", path: turns, wantFailure: "status 418 is not documented",
			resp: problemResponse(problem(418, "internal"))},
		{name: "created thread without Location", method: "POST", path: "/v1/threads", wantFailure: "Location",
			resp: jsonResponse(201, thread())},
		{name: "thread without pending_expires_at", method: "GET", path: "/v1/threads/" + threadID, wantFailure: "pending_expires_at",
			resp: jsonResponse(200, with(thread(), func(m map[string]any) { delete(m, "pending_expires_at") }))},
		{name: "stream nobody asked for", method: "POST", path: turns, wantFailure: "did not ask",
			resp: response{status: 200, header: map[string]string{"Content-Type": "text/event-stream"}, body: sse}},
		{name: "JSON when a stream was asked for", method: "POST", path: turns, accept: "text/event-stream", wantFailure: "asked for text/event-stream",
			resp: jsonResponse(200, completedTurn())},
		{name: "unknown route answered 200", method: "GET", path: "/v2/nothing", wantFailure: "must be 404",
			resp: jsonResponse(200, map[string]any{})},
		{name: "wrong method answered with a bad problem", method: "PUT", path: "/v1/threads/" + threadID, wantFailure: "MethodNotAllowed",
			resp: problemResponse(problem(405, "not_found"))},
		{name: "healthz not ok", method: "GET", path: "/healthz", wantFailure: "status",
			resp: jsonResponse(200, map[string]any{"status": "degraded"})},
		{name: "history with a bad cursor", method: "GET", path: "/v1/threads/" + threadID + "/messages", wantFailure: "next_before",
			resp: jsonResponse(200, map[string]any{"messages": []any{}, "next_before": 7})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newTestServer(t, tt.resp)
			resp := mustDo(t, srv, tt.method, tt.path, tt.accept)

			var body []byte
			failures := run(func(tb testing.TB) { body = v.Check(tb, resp) })

			if tt.wantFailure == "" {
				assert.Empty(t, failures)
			} else {
				assert.Contains(t, failures, tt.wantFailure)
			}
			// Check hands back the body and leaves it readable.
			again, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, body, again)
		})
	}
}

func TestValidateResponseWithoutRequest(t *testing.T) {
	v := openapitest.New(t)
	failures := run(func(tb testing.TB) {
		v.ValidateResponse(tb, nil, 200, http.Header{}, nil)
	})
	assert.Contains(t, failures, "no request")
}

func TestValidateEvent(t *testing.T) {
	v := openapitest.New(t)
	turn, err := json.Marshal(completedTurn())
	require.NoError(t, err)
	tests := []struct {
		event, data string
		wantFailure string
	}{
		{event: "message.start", data: `{"thread_id":"` + threadID + `","turn_id":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a0f","message_id":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a11","user_message_id":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10"}`},
		{event: "text.delta", data: `{"delta":"Hel"}`},
		{event: "text.delta", data: `{"delta":"","_meta":{"example.com/app.tokens":3}}`},
		{event: "turn.completed", data: string(turn)},
		{event: "error", data: `{"type":"urn:chatd:problem:processor_failed","title":"Processor failed","status":502,"detail":"x","code":"processor_failed"}`},

		{event: "message.start", data: `{"thread_id":"` + threadID + `"}`, wantFailure: "message_id"},
		{event: "text.delta", data: `{"text":"Hel"}`, wantFailure: "delta"},
		{event: "turn.completed", data: `{"thread_id":"` + threadID + `","status":"completed"}`, wantFailure: "structured_response"},
		{event: "error", data: `{"title":"x"}`, wantFailure: "code"},
		{event: "error", data: `not json`, wantFailure: "not JSON"},
		{event: "message.delta", data: `{}`, wantFailure: "not documented"},
	}
	for _, tt := range tests {
		t.Run(tt.event+" "+tt.data, func(t *testing.T) {
			failures := run(func(tb testing.TB) { v.ValidateEvent(tb, tt.event, []byte(tt.data)) })
			if tt.wantFailure == "" {
				assert.Empty(t, failures)
			} else {
				assert.Contains(t, failures, tt.wantFailure)
			}
		})
	}
}

func TestValidateSchema(t *testing.T) {
	v := openapitest.New(t)
	tests := []struct {
		schema, data string
		wantFailure  string
	}{
		{schema: "ContentBlock", data: `{"type":"text","text":""}`},
		{schema: "ContentBlock", data: `{"type":"resource_link","uri":"entity:node/42","name":"node 42","_meta":{"drupal.org/ai.entity":{"entity_type":"node","id":"42"}}}`},
		{schema: "ContentBlock", data: `{"type":"resource","resource":{"uri":"file:///a.bin","blob":"AAEC"},"annotations":{"audience":["assistant"]}}`},
		{schema: "Message", data: `{"id":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10","role":"user","message":"","timestamp":"2025-06-01T10:00:00.000Z"}`},
		{schema: "ElicitResult", data: `{"action":"accept","content":{"a":"x","b":1.5,"c":true,"d":["x"]}}`},
		{schema: "Meta", data: `{"progressToken":1,"drupal.org/ai.citations":[],"example.com/shop.cart_id":"c","io.modelcontextprotocol/x":{}}`},

		{schema: "ContentBlock", data: `{"type":"text"}`, wantFailure: "text"},
		{schema: "ContentBlock", data: `{"type":"image","data":"not base64!","mimeType":"image/png"}`, wantFailure: "data"},
		{schema: "ContentBlock", data: `{"type":"resource_link","uri":"a:b","name":"n","size":-1}`, wantFailure: "size"},
		{schema: "ContentBlock", data: `{"type":"text","text":"x","annotations":{"audience":["system"]}}`, wantFailure: "audience"},
		{schema: "ContentBlock", data: `{"type":"resource","resource":{"uri":"a:b"}}`, wantFailure: "resource"},
		{schema: "Message", data: `{"id":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10","role":"system","message":"","timestamp":"2025-06-01T10:00:00.000Z"}`, wantFailure: "role"},
		{schema: "ElicitResult", data: `{"action":"accept","content":{"a":{"nested":1}}}`, wantFailure: "content"},
		{schema: "ElicitResult", data: `{"action":"maybe"}`, wantFailure: "action"},
		{schema: "Meta", data: `{"drupal.org/":1}`, wantFailure: "drupal.org/"},
		{schema: "Meta", data: `{"":1}`, wantFailure: "does not match pattern"},
		{schema: "Meta", data: `{"1drupal.org/x":1}`, wantFailure: "1drupal.org/x"},
		{schema: "Meta", data: `{"drupal-.org/x":1}`, wantFailure: "drupal-.org/x"},
		{schema: "ElicitationRequest", data: `{"message":"m","requestedSchema":{"type":"object","properties":{}},"_meta":{"drupal.org/ai.elicitation_id":"3f1c2b4a-9d8e-4c7b-a6f5-1e2d3c4b5a69","drupal.org/ai.widgets":{"x":{"rows":4}}}}`, wantFailure: "widget"},
		{schema: "NoSuchSchema", data: `{}`, wantFailure: "no schema"},
	}
	for _, tt := range tests {
		t.Run(tt.schema+" "+tt.data, func(t *testing.T) {
			failures := run(func(tb testing.TB) { v.ValidateSchema(tb, tt.schema, []byte(tt.data)) })
			if tt.wantFailure == "" {
				assert.Empty(t, failures)
			} else {
				assert.Contains(t, failures, tt.wantFailure)
			}
		})
	}
}

// TestDocumentExamplesAreValid runs the document's own TurnResult examples
// through the Validator, so the examples client teams copy are real responses.
func TestDocumentExamplesAreValid(t *testing.T) {
	v := openapitest.New(t)
	doc, err := openapi3.NewLoader().LoadFromData(chatd.OpenAPI)
	require.NoError(t, err)
	mt := doc.Components.Responses["TurnResult"].Value.Content.Get("application/json")
	require.NotNil(t, mt)
	require.Contains(t, mt.Examples, "completed")
	require.Contains(t, mt.Examples, "inputRequired")
	for name, ex := range mt.Examples {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(ex.Value.Value)
			require.NoError(t, err)
			failures := run(func(tb testing.TB) { v.ValidateSchema(tb, "TurnResult", data) })
			assert.Empty(t, failures)
		})
	}
}
