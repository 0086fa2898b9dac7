package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
)

// badInputMaxBody is a body limit small enough to exceed cheaply.
const badInputMaxBody = 2048

// profileForm is an elicitation the echo processor pauses with.
const profileForm = `/elicit {"message":"Your profile?","requestedSchema":{"type":"object","properties":{` +
	`"name":{"type":"string","minLength":1,"maxLength":20},` +
	`"age":{"type":"integer","minimum":0,"maximum":150},` +
	`"colour":{"type":"string","enum":["red","green"]}},"required":["name"]}}`

// TestBadInput sends malformed, invalid and misdirected requests to every
// endpoint: each gets its documented 4xx problem and changes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.MaxBodyBytes = badInputMaxBody }))
	plain := ts.mustCreateThread(t, alice, "echo")
	ts.mustTurn(t, alice, plain, "hello")
	paused := ts.mustCreateThread(t, alice, "echo")
	ts.mustTurn(t, alice, paused, "hello")
	pause := ts.mustPause(t, alice, paused, profileForm)
	eid := pause.Elicitation.id()
	unknown := uuid.NewString()

	expand := func(path string) string {
		return strings.NewReplacer("{plain}", plain, "{paused}", paused, "{eid}", eid, "{unknown}", unknown,
			"{pausedMsg}", pause.Message.ID).Replace(path)
	}
	oversized := `{"message":"` + strings.Repeat("x", badInputMaxBody) + `"}`

	const (
		post = http.MethodPost
		get  = http.MethodGet
		del  = http.MethodDelete
	)
	tests := []struct {
		name   string
		method string
		path   string
		as     string // alice unless set
		body   string
		// contentType overrides application/json; "-" sends none.
		contentType string
		header      http.Header
		status      int
		code        string
		// fields, when set, must be exactly the problem's error fields.
		fields []string
	}{
		// Creating threads.
		{name: "create: malformed JSON", method: post, path: "/v1/threads", body: `{"processor":`, status: 400, code: "invalid_request"},
		{name: "create: unknown field", method: post, path: "/v1/threads", body: `{"processor":"echo","model":"x"}`, status: 400, code: "invalid_request"},
		{name: "create: processor a number", method: post, path: "/v1/threads", body: `{"processor":5}`, status: 400, code: "invalid_request"},
		{name: "create: body an array", method: post, path: "/v1/threads", body: `["echo"]`, status: 400, code: "invalid_request"},
		{name: "create: unknown processor", method: post, path: "/v1/threads", body: `{"processor":"gpt"}`, status: 422, code: "validation_failed", fields: []string{"processor"}},
		{name: "create: text/plain", method: post, path: "/v1/threads", body: `{"processor":"echo"}`, contentType: "text/plain", status: 415, code: "unsupported_media_type"},
		{name: "create: oversized", method: post, path: "/v1/threads", body: `{"processor":"` + strings.Repeat("e", badInputMaxBody) + `"}`, status: 413, code: "payload_too_large"},

		// Reading and deleting threads.
		{name: "get: malformed id", method: get, path: "/v1/threads/not-a-uuid", status: 404, code: "not_found"},
		{name: "get: upper-case id", method: get, path: "/v1/threads/" + strings.ToUpper(plain), status: 404, code: "not_found"},
		{name: "get: unknown id", method: get, path: "/v1/threads/{unknown}", status: 404, code: "not_found"},
		{name: "get: another principal's", method: get, path: "/v1/threads/{plain}", as: bob, status: 404, code: "not_found"},
		{name: "delete: malformed id", method: del, path: "/v1/threads/x%27%20OR%201", status: 404, code: "not_found"},
		{name: "delete: unknown id", method: del, path: "/v1/threads/{unknown}", status: 404, code: "not_found"},
		{name: "delete: another principal's", method: del, path: "/v1/threads/{paused}", as: bob, status: 404, code: "not_found"},

		// Turns.
		{name: "turn: malformed JSON", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":`, status: 400, code: "invalid_request"},
		{name: "turn: trailing garbage", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi"} x`, status: 400, code: "invalid_request"},
		{name: "turn: two values", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi"}{"message":"hi"}`, status: 400, code: "invalid_request"},
		{name: "turn: unknown field", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi","processor":"demo"}`, status: 400, code: "invalid_request"},
		{name: "turn: message a number", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":42}`, status: 400, code: "invalid_request"},
		{name: "turn: message null", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":null}`, status: 400, code: "invalid_request"},
		{name: "turn: content_blocks a string", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi","content_blocks":"text"}`, status: 400, code: "invalid_request"},
		{name: "turn: content_blocks an object", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi","content_blocks":{"type":"text","text":"x"}}`, status: 400, code: "invalid_request"},
		{name: "turn: _meta an array", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi","_meta":[]}`, status: 400, code: "invalid_request"},
		{name: "turn: missing message", method: post, path: "/v1/threads/{plain}/turns", body: `{"content_blocks":[]}`, status: 400, code: "invalid_request"},
		{name: "turn: empty object", method: post, path: "/v1/threads/{plain}/turns", body: `{}`, status: 400, code: "invalid_request"},
		{name: "turn: empty message without blocks", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":""}`, status: 400, code: "invalid_request"},
		{name: "turn: empty message, empty blocks", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"","content_blocks":[]}`, status: 400, code: "invalid_request"},
		{name: "turn: body null", method: post, path: "/v1/threads/{plain}/turns", body: `null`, status: 400, code: "invalid_request"},
		{name: "turn: body a string", method: post, path: "/v1/threads/{plain}/turns", body: `"hi"`, status: 400, code: "invalid_request"},
		{name: "turn: empty body", method: post, path: "/v1/threads/{plain}/turns", body: ``, status: 400, code: "invalid_request"},
		{name: "turn: invalid escape", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"\ud800\x"}`, status: 400, code: "invalid_request"},
		{name: "turn: oversized", method: post, path: "/v1/threads/{plain}/turns", body: oversized, status: 413, code: "payload_too_large"},
		{name: "turn: text/plain", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi"}`, contentType: "text/plain", status: 415, code: "unsupported_media_type"},
		{name: "turn: no content type", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi"}`, contentType: "-", status: 415, code: "unsupported_media_type"},
		{name: "turn: form content type", method: post, path: "/v1/threads/{plain}/turns", body: `message=hi`, contentType: "application/x-www-form-urlencoded", status: 415, code: "unsupported_media_type"},
		{name: "turn: malformed thread id", method: post, path: "/v1/threads/123/turns", body: `{"message":"hi"}`, status: 404, code: "not_found"},
		{name: "turn: unknown thread", method: post, path: "/v1/threads/{unknown}/turns", body: `{"message":"hi"}`, status: 404, code: "not_found"},
		{name: "turn: another principal's", method: post, path: "/v1/threads/{plain}/turns", as: bob, body: `{"message":"hi"}`, status: 404, code: "not_found"},
		{name: "turn: bad base64", method: post, path: "/v1/threads/{plain}/turns",
			body:   `{"message":"","content_blocks":[{"type":"image","data":"not base64!","mimeType":"image/png"}]}`,
			status: 422, code: "validation_failed", fields: []string{"content_blocks[0].data"}},
		{name: "turn: unknown block type", method: post, path: "/v1/threads/{plain}/turns",
			body:   `{"message":"hi","content_blocks":[{"type":"text","text":"ok"},{"type":"video","uri":"x"}]}`,
			status: 422, code: "validation_failed", fields: []string{"content_blocks[1].type"}},
		{name: "turn: text block without text", method: post, path: "/v1/threads/{plain}/turns",
			body:   `{"message":"hi","content_blocks":[{"type":"text"}]}`,
			status: 422, code: "validation_failed", fields: []string{"content_blocks[0].text"}},
		{name: "turn: resource with text and blob", method: post, path: "/v1/threads/{plain}/turns",
			body:   `{"message":"hi","content_blocks":[{"type":"resource","resource":{"uri":"file:///a","text":"a","blob":"YQ=="}}]}`,
			status: 422, code: "validation_failed", fields: []string{"content_blocks[0].resource"}},
		{name: "turn: priority out of range", method: post, path: "/v1/threads/{plain}/turns",
			body:   `{"message":"hi","content_blocks":[{"type":"text","text":"a","annotations":{"priority":1.5}}]}`,
			status: 422, code: "validation_failed", fields: []string{"content_blocks[0].annotations.priority"}},
		{name: "turn: invalid _meta key", method: post, path: "/v1/threads/{plain}/turns",
			body:   `{"message":"hi","_meta":{"drupal.org/ai/citations":[]}}`,
			status: 422, code: "validation_failed", fields: []string{`_meta["drupal.org/ai/citations"]`}},
		{name: "turn: _meta key with a space", method: post, path: "/v1/threads/{plain}/turns",
			body:   `{"message":"hi","_meta":{"my key":1,"ok.example/fine":2}}`,
			status: 422, code: "validation_failed", fields: []string{`_meta["my key"]`}},
		{name: "turn: invalid block _meta key", method: post, path: "/v1/threads/{plain}/turns",
			body:   `{"message":"hi","content_blocks":[{"type":"text","text":"a","_meta":{"-bad/x":1}}]}`,
			status: 422, code: "validation_failed", fields: []string{`content_blocks[0]._meta["-bad/x"]`}},
		{name: "turn: idempotency key with a space", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi"}`,
			header: http.Header{"Idempotency-Key": {"two words"}}, status: 400, code: "invalid_request"},
		{name: "turn: idempotency key too long", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi"}`,
			header: http.Header{"Idempotency-Key": {strings.Repeat("k", 256)}}, status: 400, code: "invalid_request"},
		{name: "turn: empty idempotency key", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi"}`,
			header: http.Header{"Idempotency-Key": {""}}, status: 400, code: "invalid_request"},
		{name: "turn: two idempotency keys", method: post, path: "/v1/threads/{plain}/turns", body: `{"message":"hi"}`,
			header: http.Header{"Idempotency-Key": {"a", "b"}}, status: 400, code: "invalid_request"},
		{name: "turn: while pending", method: post, path: "/v1/threads/{paused}/turns", body: `{"message":"hi"}`, status: 409, code: "elicitation_pending"},
		{name: "streamed turn: unknown thread", method: post, path: "/v1/threads/{unknown}/turns", body: `{"message":"hi"}`,
			header: http.Header{"Accept": {"text/event-stream"}}, status: 404, code: "not_found"},
		{name: "streamed turn: malformed JSON", method: post, path: "/v1/threads/{plain}/turns", body: `{`,
			header: http.Header{"Accept": {"text/event-stream"}}, status: 400, code: "invalid_request"},

		// History.
		{name: "history: limit 0", method: get, path: "/v1/threads/{plain}/messages?limit=0", status: 400, code: "invalid_request"},
		{name: "history: limit 201", method: get, path: "/v1/threads/{plain}/messages?limit=201", status: 400, code: "invalid_request"},
		{name: "history: limit abc", method: get, path: "/v1/threads/{plain}/messages?limit=abc", status: 400, code: "invalid_request"},
		{name: "history: limit negative", method: get, path: "/v1/threads/{plain}/messages?limit=-1", status: 400, code: "invalid_request"},
		{name: "history: limit empty", method: get, path: "/v1/threads/{plain}/messages?limit=", status: 400, code: "invalid_request"},
		{name: "history: two limits", method: get, path: "/v1/threads/{plain}/messages?limit=1&limit=2", status: 400, code: "invalid_request"},
		{name: "history: malformed before", method: get, path: "/v1/threads/{plain}/messages?before=abc", status: 400, code: "invalid_request"},
		{name: "history: unknown before", method: get, path: "/v1/threads/{plain}/messages?before={unknown}", status: 400, code: "invalid_request"},
		{name: "history: another thread's message", method: get, path: "/v1/threads/{plain}/messages?before=" + "{eid}", status: 400, code: "invalid_request"},
		{name: "history: a message of another thread", method: get, path: "/v1/threads/{plain}/messages?before={pausedMsg}", status: 400, code: "invalid_request"},
		{name: "history: malformed thread id", method: get, path: "/v1/threads/nope/messages", status: 404, code: "not_found"},
		{name: "history: another principal's", method: get, path: "/v1/threads/{plain}/messages", as: bob, status: 404, code: "not_found"},

		// Answers.
		{name: "answer: malformed JSON", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{"action":`, status: 400, code: "invalid_request"},
		{name: "answer: unknown field", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{"action":"accept","contents":{}}`, status: 400, code: "invalid_request"},
		{name: "answer: action a number", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{"action":1}`, status: 400, code: "invalid_request"},
		{name: "answer: content an array", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{"action":"accept","content":["x"]}`, status: 400, code: "invalid_request"},
		{name: "answer: text/plain", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{"action":"cancel"}`, contentType: "text/plain", status: 415, code: "unsupported_media_type"},
		{name: "answer: oversized", method: post, path: "/v1/threads/{paused}/elicitations/{eid}",
			body: `{"action":"accept","content":{"name":"` + strings.Repeat("n", badInputMaxBody) + `"}}`, status: 413, code: "payload_too_large"},
		{name: "answer: bad action", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{"action":"maybe"}`,
			status: 422, code: "validation_failed", fields: []string{"action"}},
		{name: "answer: missing action", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{}`,
			status: 422, code: "validation_failed", fields: []string{"action"}},
		{name: "answer: decline with content", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{"action":"decline","content":{"name":"x"}}`,
			status: 422, code: "validation_failed", fields: []string{"content"}},
		{name: "answer: cancel with content", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", body: `{"action":"cancel","content":{"age":1}}`,
			status: 422, code: "validation_failed", fields: []string{"content"}},
		{name: "answer: every field wrong", method: post, path: "/v1/threads/{paused}/elicitations/{eid}",
			body:   `{"action":"accept","content":{"age":1.5,"colour":"blue","extra":true}}`,
			status: 422, code: "validation_failed", fields: []string{"age", "colour", "extra", "name"}},
		{name: "answer: wrong types", method: post, path: "/v1/threads/{paused}/elicitations/{eid}",
			body:   `{"action":"accept","content":{"name":7,"age":"7"}}`,
			status: 422, code: "validation_failed", fields: []string{"age", "name"}},
		{name: "answer: too long", method: post, path: "/v1/threads/{paused}/elicitations/{eid}",
			body:   `{"action":"accept","content":{"name":"` + strings.Repeat("é", 21) + `"}}`,
			status: 422, code: "validation_failed", fields: []string{"name"}},
		{name: "answer: invalid _meta key", method: post, path: "/v1/threads/{paused}/elicitations/{eid}",
			body: `{"action":"cancel","_meta":{"a/b/c":1}}`, status: 422, code: "validation_failed"},
		{name: "answer: malformed elicitation id", method: post, path: "/v1/threads/{paused}/elicitations/xyz", body: `{"action":"cancel"}`,
			status: 404, code: "elicitation_not_found"},
		{name: "answer: unknown elicitation id", method: post, path: "/v1/threads/{paused}/elicitations/{unknown}", body: `{"action":"cancel"}`,
			status: 404, code: "elicitation_not_found"},
		{name: "answer: no elicitation on the thread", method: post, path: "/v1/threads/{plain}/elicitations/{eid}", body: `{"action":"cancel"}`,
			status: 404, code: "elicitation_not_found"},
		{name: "answer: unknown thread", method: post, path: "/v1/threads/{unknown}/elicitations/{eid}", body: `{"action":"cancel"}`, status: 404, code: "not_found"},
		{name: "answer: another principal's", method: post, path: "/v1/threads/{paused}/elicitations/{eid}", as: bob, body: `{"action":"cancel"}`, status: 404, code: "not_found"},

		// Routing.
		{name: "unknown route", method: get, path: "/v1/nothing", status: 404, code: "not_found"},
		{name: "unknown root route", method: get, path: "/admin", status: 404, code: "not_found"},
		{name: "wrong method on turn events", method: post, path: "/v1/threads/{plain}/turns/{plain}/events", body: `{}`, status: 405, code: "method_not_allowed"},
		{name: "wrong method on threads", method: http.MethodPut, path: "/v1/threads", body: `{}`, status: 405, code: "method_not_allowed"},
		{name: "wrong method on a thread", method: http.MethodPut, path: "/v1/threads/{plain}", body: `{}`, status: 405, code: "method_not_allowed"},
		{name: "wrong method on turns", method: get, path: "/v1/threads/{plain}/turns", status: 405, code: "method_not_allowed"},
		{name: "wrong method on an elicitation", method: get, path: "/v1/threads/{paused}/elicitations/{eid}", status: 405, code: "method_not_allowed"},
		{name: "wrong method on healthz", method: post, path: "/healthz", status: 405, code: "method_not_allowed"},
	}

	snapshot := func() []string {
		return []string{
			string(ts.mustThreadRaw(t, alice, plain)), string(ts.mustHistoryRaw(t, alice, plain)),
			string(ts.mustThreadRaw(t, alice, paused)), string(ts.mustHistoryRaw(t, alice, paused)),
		}
	}
	want := snapshot()
	require.Contains(t, want[2], eid, "the paused thread must be pending")
	runsBefore := ts.echo.runs.Load()

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest{method: tt.method, path: expand(tt.path), as: tt.as, header: tt.header}
			if req.as == "" {
				req.as = alice
			}
			if tt.body != "" || tt.method == post {
				req.body = []byte(expand(tt.body))
			}
			switch tt.contentType {
			case "-":
				req.noContentType = true
			case "":
			default:
				req.contentType = tt.contentType
			}
			p := mustProblem(t, ts.do(t, req), tt.status, tt.code)
			if tt.fields != nil {
				got := p.fields()
				assert.ElementsMatch(t, tt.fields, got, "errors: %+v", p.Errors)
			}
			if tt.status == http.StatusUnprocessableEntity && tt.code == "validation_failed" {
				assert.NotEmpty(t, p.Errors, "validation_failed must list the errors")
				for _, e := range p.Errors {
					assert.NotEmpty(t, e.Detail, "field %s", e.Field)
				}
			}
			assert.Equal(t, "urn:chatd:problem:"+tt.code, p.Type)
			assert.NotEmpty(t, p.Title)
			if got := snapshot(); !assert.Equal(t, want, got, "bad input must change nothing") {
				want = got // report each change once, not again in every later row
			}
		})
	}
	assert.Equal(t, runsBefore, ts.echo.runs.Load(), "no bad request reaches the processor")

	// The elicitation survived every bad answer and still takes a good one.
	res := ts.mustAnswer(t, alice, paused, eid, map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "age": 36}})
	assert.Equal(t, `{"action":"accept","content":{"age":36,"name":"Ada"}}`, res.Message.Message)
}
