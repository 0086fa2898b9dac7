package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
)

// The frontend protocols' scenarios run from Node with the real client
// packages (TestFrontendProtocols); these tests hold their HTTP edges — every
// answer checked against openapi.yaml by ts.do — and what Node cannot
// arrange: limits, idempotent retries, the exact bytes.

func aiSDKBody(threadID, text string) []byte {
	return []byte(`{"id":"` + threadID + `","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":` + jsonString(text) + `}]}]}`)
}

func aguiBody(threadID, text string) []byte {
	return []byte(`{"threadId":"` + threadID + `","runId":"r1","messages":[{"id":"u1","role":"user","content":` + jsonString(text) + `}]}`)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// dataLines returns the JSON of a protocol stream's data lines.
func dataLines(tb testing.TB, body []byte) []string {
	tb.Helper()
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, data)
		}
	}
	return out
}

// partTypes returns each data line's type (or the line itself when it is not
// an object with one).
func partTypes(tb testing.TB, lines []string) []string {
	tb.Helper()
	out := make([]string, len(lines))
	for i, l := range lines {
		var p struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(l), &p) != nil || p.Type == "" {
			out[i] = l
			continue
		}
		out[i] = p.Type
	}
	return out
}

func TestAISDKChat(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ai-sdk/chat", as: alice, body: aiSDKBody(thread, "hi")})
	require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
	assert.Equal(t, "v1", resp.Header.Get("X-Vercel-Ai-Ui-Message-Stream"))
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := dataLines(t, resp.Body)
	assert.Equal(t, []string{"start", "start-step", "text-start", "text-delta", "text-end", "message-metadata", "finish-step", "finish", "[DONE]"}, partTypes(t, lines))
	msgs := ts.mustHistory(t, alice, thread)
	require.Len(t, msgs, 2)
	assert.Equal(t, `{"type":"start","messageId":"`+msgs[1].ID+`"}`, lines[0])
}

func TestAISDKChatRefusals(t *testing.T) {
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.MaxBodyBytes = 4096; c.MaxBlocks = 1 }))
	thread := ts.mustCreateThread(t, alice, "echo")
	paused := ts.mustCreateThread(t, alice, "echo")
	ts.mustPause(t, alice, paused, `/elicit {"message":"Sure?","requestedSchema":{"type":"object","properties":{}}}`)
	image := `{"type":"file","mediaType":"image/png","url":"data:image/png;base64,iVBORw0KGgo="}`
	tests := []struct {
		name   string
		req    testRequest
		status int
		code   string
	}{
		{"no credentials", testRequest{body: aiSDKBody(thread, "hi")}, http.StatusUnauthorized, "unauthorized"},
		{"malformed JSON", testRequest{as: alice, body: []byte(`{"id":`)}, http.StatusBadRequest, "invalid_request"},
		{"no messages", testRequest{as: alice, body: []byte(`{"id":"` + thread + `","messages":[]}`)}, http.StatusBadRequest, "invalid_request"},
		{"not JSON", testRequest{as: alice, body: aiSDKBody(thread, "hi"), contentType: "text/plain"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"too large", testRequest{as: alice, body: aiSDKBody(thread, strings.Repeat("x", 5000))}, http.StatusRequestEntityTooLarge, "payload_too_large"},
		{"too many attachments", testRequest{as: alice, body: []byte(`{"id":"` + thread + `","messages":[{"role":"user","parts":[` + image + `,` + image + `]}]}`)}, http.StatusUnprocessableEntity, "validation_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.method, tt.req.path = http.MethodPost, "/v1/ai-sdk/chat"
			mustProblem(t, ts.do(t, tt.req), tt.status, tt.code)
		})
	}
	// Past the input, a refusal is the stream's error part.
	answer := func(threadID, output string) []byte {
		return []byte(`{"id":"` + threadID + `","messages":[{"id":"a","role":"assistant","parts":[` +
			`{"type":"tool-elicitation","toolCallId":"` + ts.mustThread(t, alice, paused).PendingElicitation.id() + `","state":"output-available","output":` + output + `}]}]}`)
	}
	for _, tt := range []struct {
		name      string
		as        string
		body      []byte
		errorText string
	}{
		{"a malformed thread ID", alice, aiSDKBody("thread-1", "hi"), "thread not found (not_found)"},
		{"an unknown thread", alice, aiSDKBody("0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00", "hi"), "thread not found (not_found)"},
		{"another principal's thread", bob, aiSDKBody(thread, "hi"), "thread not found (not_found)"},
		{"an answer that does not fit", alice, answer(paused, `{"action":"accept","content":{"x":1}}`), "the request has invalid fields; see errors (validation_failed): x: is not a declared property"},
		{"an unknown elicitation", alice, []byte(`{"id":"` + paused + `","messages":[{"id":"a","role":"assistant","parts":[` +
			`{"type":"tool-elicitation","toolCallId":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00","state":"output-available","output":{"action":"cancel"}}]}]}`), "no such elicitation on this thread (elicitation_not_found)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ai-sdk/chat", as: tt.as, body: tt.body})
			require.Equal(t, http.StatusOK, resp.Status)
			assert.Equal(t, []string{`{"type":"error","errorText":` + jsonString(tt.errorText) + `}`, "[DONE]"}, dataLines(t, resp.Body))
		})
	}
	assert.Empty(t, ts.mustHistory(t, alice, thread))

	// A new message while a question is pending is no refusal: it cancels
	// the question, as a chat user expects.
	resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ai-sdk/chat", as: alice, body: aiSDKBody(paused, "hi")})
	require.Equal(t, http.StatusOK, resp.Status)
	assert.Equal(t, []string{"start", "start-step", "text-start", "text-delta", "text-end", "message-metadata", "finish-step", "finish", "[DONE]"},
		partTypes(t, dataLines(t, resp.Body)))
	msgs := ts.mustHistory(t, alice, paused)
	require.Len(t, msgs, 5)
	assert.Equal(t, "Cancelled.", msgs[2].Message)
	assert.Nil(t, ts.mustThread(t, alice, paused).PendingElicitation)
}

func TestAISDKChatIdempotentRetry(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	header := http.Header{"Idempotency-Key": {"k1"}}
	first := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ai-sdk/chat", as: alice, header: header, body: aiSDKBody(thread, "once")})
	runs := ts.echo.runs.Load()
	again := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ai-sdk/chat", as: alice, header: header, body: aiSDKBody(thread, "once")})
	require.Equal(t, http.StatusOK, again.Status)
	assert.Equal(t, runs, ts.echo.runs.Load(), "the retry runs nothing")
	assert.Equal(t, dataLines(t, first.Body), dataLines(t, again.Body))
	assert.Len(t, ts.mustHistory(t, alice, thread), 2)

	other := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ai-sdk/chat", as: alice, header: header, body: aiSDKBody(thread, "twice")})
	assert.Equal(t, []string{`{"type":"error","errorText":"Idempotency-Key was already used with a different request body (idempotency_conflict)"}`, "[DONE]"}, dataLines(t, other.Body))
}

func TestAISDKStreamWithNothingRunning(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/ai-sdk/chat/" + thread + "/stream", as: alice})
	assert.Equal(t, http.StatusNoContent, resp.Status)
	assert.Empty(t, resp.Body)
	mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/ai-sdk/chat/" + thread + "/stream", as: bob}), http.StatusNotFound, "not_found")
	mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/ai-sdk/chat/nope/stream", as: alice}), http.StatusNotFound, "not_found")
}

func TestAGUIRun(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ag-ui", as: alice, body: aguiBody(thread, "hi")})
	require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
	assert.Equal(t, []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}, partTypes(t, dataLines(t, resp.Body)))
	assert.Empty(t, resp.Header.Get("X-Vercel-Ai-Ui-Message-Stream"))
}

func TestAGUIRefusals(t *testing.T) {
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.MaxBodyBytes = 4096 }))
	thread := ts.mustCreateThread(t, alice, "echo")
	tests := []struct {
		name   string
		req    testRequest
		status int
		code   string
	}{
		{"no credentials", testRequest{body: aguiBody(thread, "hi")}, http.StatusUnauthorized, "unauthorized"},
		{"malformed JSON", testRequest{as: alice, body: []byte(`[`)}, http.StatusBadRequest, "invalid_request"},
		{"no runId", testRequest{as: alice, body: []byte(`{"threadId":"` + thread + `","messages":[]}`)}, http.StatusBadRequest, "invalid_request"},
		{"not JSON", testRequest{as: alice, body: aguiBody(thread, "hi"), contentType: "text/plain"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"too large", testRequest{as: alice, body: aguiBody(thread, strings.Repeat("x", 5000))}, http.StatusRequestEntityTooLarge, "payload_too_large"},
		{"a URL attachment", testRequest{as: alice, body: []byte(`{"threadId":"` + thread + `","runId":"r","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","value":"https://example.com/a.png"}}]}]}`)}, http.StatusUnprocessableEntity, "validation_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.method, tt.req.path = http.MethodPost, "/v1/ag-ui"
			mustProblem(t, ts.do(t, tt.req), tt.status, tt.code)
		})
	}
	// Past the input, a refusal is the run's RUN_ERROR.
	for _, tt := range []struct {
		name, as, thread, code string
	}{
		{"a malformed thread ID", alice, "thread-1", "not_found"},
		{"another principal's thread", bob, thread, "not_found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ag-ui", as: tt.as, body: aguiBody(tt.thread, "hi")})
			require.Equal(t, http.StatusOK, resp.Status)
			lines := dataLines(t, resp.Body)
			require.Len(t, lines, 1)
			assert.JSONEq(t, `{"type":"RUN_ERROR","code":"`+tt.code+`","message":"thread not found"}`, lines[0])
		})
	}
	assert.Empty(t, ts.mustHistory(t, alice, thread))
}

func TestAGUIIdempotentRetry(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	header := http.Header{"Idempotency-Key": {"k1"}}
	first := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ag-ui", as: alice, header: header, body: aguiBody(thread, "once")})
	runs := ts.echo.runs.Load()
	again := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/ag-ui", as: alice, header: header, body: aguiBody(thread, "once")})
	assert.Equal(t, runs, ts.echo.runs.Load(), "the retry runs nothing")
	assert.Equal(t, dataLines(t, first.Body), dataLines(t, again.Body))
	assert.Len(t, ts.mustHistory(t, alice, thread), 2)
}
