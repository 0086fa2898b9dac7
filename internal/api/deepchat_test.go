package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/blocks"
)

func deepChatBody(threadID, text string) []byte {
	return []byte(`{"messages":[{"role":"ai","text":"earlier"},{"role":"user","text":` + jsonString(text) + `}],"thread_id":"` + threadID + `"}`)
}

var sseAccept = http.Header{"Accept": {"text/event-stream"}}

// deepChat posts a deep-chat turn and returns its html.
func (ts *testServer) deepChat(tb testing.TB, as, threadID, text string) string {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: as, body: deepChatBody(threadID, text)})
	require.Equal(tb, http.StatusOK, resp.Status, string(resp.Body))
	var out struct {
		HTML string `json:"html"`
	}
	require.NoError(tb, json.Unmarshal(resp.Body, &out))
	return out.HTML
}

// mustDeepChatError checks an error answer deep-chat can read.
func mustDeepChatError(tb testing.TB, resp *testResponse, status int, detail string) {
	tb.Helper()
	assert.Equal(tb, status, resp.Status, string(resp.Body))
	assert.Equal(tb, "application/json", resp.Header.Get("Content-Type"))
	var out map[string]string
	require.NoError(tb, json.Unmarshal(resp.Body, &out), string(resp.Body))
	assert.Contains(tb, out["error"], detail)
	assert.Len(tb, out, 1)
}

func TestDeepChatJSON(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	got := ts.deepChat(t, alice, thread, `<script>alert(1)</script> hi`)
	assert.Equal(t, `<div class="chatd-message chatd-assistant"><p>&lt;script&gt;alert(1)&lt;/script&gt; hi</p></div>`, got)
	msgs := ts.mustHistory(t, alice, thread)
	require.Len(t, msgs, 2)
	assert.Equal(t, `<script>alert(1)</script> hi`, msgs[0].Message, "only the last message is taken")
}

func TestDeepChatStream(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, header: sseAccept,
		body: deepChatBody(thread, "/slow 1 a <b> c")})
	require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, []string{
		`{"html":"a "}`, `{"html":"&lt;b&gt; "}`, `{"html":"c"}`,
		`{"html":"<div class=\"chatd-message chatd-assistant\"><p>a &lt;b&gt; c</p></div>","overwrite":true}`,
	}, dataLines(t, resp.Body))
}

func TestDeepChatStreamFailure(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, header: sseAccept, body: deepChatBody(thread, "/fail")})
	require.Equal(t, http.StatusOK, resp.Status)
	lines := dataLines(t, resp.Body)
	require.Len(t, lines, 1)
	var out map[string]string
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &out))
	assert.NotEmpty(t, out["error"])

	// Refused before the stream began: a plain error answer.
	mustDeepChatError(t, ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: bob, header: sseAccept, body: deepChatBody(thread, "hi")}),
		http.StatusNotFound, "thread not found")
}

func TestDeepChatBlocksAndSuggestions(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "demo")
	got := ts.deepChat(t, alice, thread, "card")
	assert.Contains(t, got, `class="chatd-block chatd-entity"`)
	assert.Contains(t, got, `<button class="deep-chat-button deep-chat-suggestion-button" type="button">Cite your sources</button>`)
	assert.NotContains(t, got, `<li>Cite your sources</li>`)
}

const confirmElicit = `/elicit {"message":"Delete <all>?","requestedSchema":{"type":"object","properties":{}}}`

const choiceElicit = `/elicit {"message":"Which room?","requestedSchema":{"type":"object","properties":{"room":{"type":"string","oneOf":[{"const":"a","title":"Room A"},{"const":"b","title":"Room B"}]}},"required":["room"]}}`

const namedElicit = `/elicit {"message":"Size?","requestedSchema":{"type":"object","properties":{"size":{"type":"string","enum":["s","m"],"enumNames":["Small","Medium"]}},"required":["size"]}}`

const enumElicit = `/elicit {"message":"Size?","requestedSchema":{"type":"object","properties":{"size":{"type":"string","enum":["s","m"]}},"required":["size"]}}`

const formElicit = `/elicit {"message":"Book","requestedSchema":{"type":"object","properties":{"title":{"type":"string","title":"Title"},"when":{"type":"string","format":"date"},"n":{"type":"integer","minimum":1},"notify":{"type":"boolean","default":true}},"required":["title"]}}`

func TestDeepChatButtonAnswers(t *testing.T) {
	ts := newTestServer(t)
	tests := []struct {
		name, elicit, buttons, answer, reply string
	}{
		{"confirm yes", confirmElicit, "Yes No", "Yes", `{"action":"accept"}`},
		{"confirm no", confirmElicit, "Yes No", "No", `{"action":"decline"}`},
		{"single choice by oneOf title", choiceElicit, "Room A Room B", "Room B", `{"action":"accept","content":{"room":"b"}}`},
		{"single choice by enumNames", namedElicit, "Small Medium", "Medium", `{"action":"accept","content":{"size":"m"}}`},
		{"single choice by value", enumElicit, "s m", "m", `{"action":"accept","content":{"size":"m"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			asked := ts.deepChat(t, alice, thread, tt.elicit)
			assert.Contains(t, asked, `<form class="chatd-question"`)
			var titles []string
			for _, part := range strings.Split(asked, `deep-chat-suggestion-button" type="button">`)[1:] {
				titles = append(titles, strings.Split(part, "<")[0])
			}
			assert.Equal(t, tt.buttons, strings.Join(titles, " "))
			mustDeepChatError(t, ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, body: deepChatBody(thread, "something else")}),
				http.StatusConflict, "waiting for the answer")
			got := ts.deepChat(t, alice, thread, tt.answer)
			assert.Contains(t, got, jsonEscapedHTML(tt.reply))
		})
	}
}

// jsonEscapedHTML is s as html/template escapes it in text.
func jsonEscapedHTML(s string) string {
	return strings.ReplaceAll(s, `"`, "&#34;")
}

func TestDeepChatForm(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	got := ts.deepChat(t, alice, thread, formElicit)
	for _, want := range []string{
		`<form class="chatd-question" data-elicitation-id="`,
		`<input type="text" name="title" value="" required>`,
		`<input type="date" name="when" value="">`,
		`<input type="number" name="n" value="" step="1" min="1">`,
		`<input type="checkbox" name="notify" checked>`,
		`<button type="submit" class="chatd-submit">Send</button>`,
	} {
		assert.Contains(t, got, want)
	}
	mustDeepChatError(t, ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, body: deepChatBody(thread, "Yes")}),
		http.StatusConflict, "answer its form first")
	// The history shows the form while it is pending.
	hist := ts.deepChatHistory(t, alice, thread)
	require.Len(t, hist, 2)
	assert.Contains(t, hist[1].HTML, `<form class="chatd-question"`)
}

type deepChatItem struct {
	Role string `json:"role"`
	HTML string `json:"html"`
}

func (ts *testServer) deepChatHistory(tb testing.TB, as, threadID string) []deepChatItem {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/v1/deep-chat/history?thread_id=" + url.QueryEscape(threadID), as: as})
	require.Equal(tb, http.StatusOK, resp.Status, string(resp.Body))
	var out []deepChatItem
	require.NoError(tb, json.Unmarshal(resp.Body, &out))
	return out
}

func TestDeepChatHistory(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	ts.deepChat(t, alice, thread, "one <i>")
	ts.deepChat(t, alice, thread, "two")
	assert.Equal(t, []deepChatItem{
		{"user", `<div class="chatd-message chatd-user"><p>one &lt;i&gt;</p></div>`},
		{"ai", `<div class="chatd-message chatd-assistant"><p>one &lt;i&gt;</p></div>`},
		{"user", `<div class="chatd-message chatd-user"><p>two</p></div>`},
		{"ai", `<div class="chatd-message chatd-assistant"><p>two</p></div>`},
	}, ts.deepChatHistory(t, alice, thread))
	for _, tt := range []struct {
		name, as, query string
		status          int
		detail          string
	}{
		{"no thread_id", alice, "", http.StatusBadRequest, "thread_id: required"},
		{"unknown thread", alice, "?thread_id=0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00", http.StatusNotFound, "thread not found"},
		{"another principal's thread", bob, "?thread_id=" + thread, http.StatusNotFound, "thread not found"},
		{"no credentials", nobody, "?thread_id=" + thread, http.StatusUnauthorized, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mustDeepChatError(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/deep-chat/history" + tt.query, as: tt.as}), tt.status, tt.detail)
		})
	}
}

func TestDeepChatRefusals(t *testing.T) {
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.MaxBodyBytes = 4096 }))
	thread := ts.mustCreateThread(t, alice, "echo")
	tests := []struct {
		name   string
		req    testRequest
		status int
		detail string
	}{
		{"no credentials", testRequest{body: deepChatBody(thread, "hi")}, http.StatusUnauthorized, ""},
		{"malformed JSON", testRequest{as: alice, body: []byte(`{"messages":`)}, http.StatusBadRequest, "malformed deep-chat body"},
		{"no thread_id", testRequest{as: alice, body: []byte(`{"messages":[{"role":"user","text":"hi"}]}`)}, http.StatusBadRequest, "thread_id: required"},
		{"no messages", testRequest{as: alice, body: []byte(`{"messages":[],"thread_id":"` + thread + `"}`)}, http.StatusBadRequest, "messages"},
		{"last message not the user's", testRequest{as: alice, body: []byte(`{"messages":[{"role":"ai","text":"x"}],"thread_id":"` + thread + `"}`)}, http.StatusBadRequest, "role"},
		{"unknown thread", testRequest{as: alice, body: deepChatBody("0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00", "hi")}, http.StatusNotFound, "thread not found"},
		{"malformed thread ID", testRequest{as: alice, body: deepChatBody("thread-1", "hi")}, http.StatusNotFound, "thread not found"},
		{"another principal's thread", testRequest{as: bob, body: deepChatBody(thread, "hi")}, http.StatusNotFound, "thread not found"},
		{"huge body", testRequest{as: alice, body: deepChatBody(thread, strings.Repeat("x", 5000))}, http.StatusRequestEntityTooLarge, "exceeds 4096 bytes"},
		{"not JSON", testRequest{as: alice, body: deepChatBody(thread, "hi"), contentType: "text/plain"}, http.StatusUnsupportedMediaType, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.method, tt.req.path = http.MethodPost, "/v1/deep-chat"
			mustDeepChatError(t, ts.do(t, tt.req), tt.status, tt.detail)
		})
	}
	t.Run("wrong method", func(t *testing.T) {
		resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/deep-chat", as: alice})
		mustDeepChatError(t, resp, http.StatusMethodNotAllowed, "allowed: POST")
	})
}

type filePart struct{ name, contentType, data string }

func multipartBody(tb testing.TB, threadID, text string, files ...filePart) ([]byte, string) {
	tb.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="files"; filename="`+f.name+`"`)
		h.Set("Content-Type", f.contentType)
		w, err := mw.CreatePart(h)
		require.NoError(tb, err)
		_, _ = w.Write([]byte(f.data))
	}
	require.NoError(tb, mw.WriteField("thread_id", threadID))
	if text != "" {
		require.NoError(tb, mw.WriteField("message1", `{"role":"user","text":`+jsonString(text)+`}`))
	}
	require.NoError(tb, mw.Close())
	return buf.Bytes(), mw.FormDataContentType()
}

func TestDeepChatMultipart(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	png := "\x89PNG\r\n\x1a\n"
	body, ct := multipartBody(t, thread, "look", filePart{"a.png", "image/png", png}, filePart{"b.ogg", "audio/ogg", "OggS"})
	resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, body: body, contentType: ct})
	require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
	assert.Contains(t, string(resp.Body), `<img src=\"data:image/png;base64,iVBORw0KGgo=\"`)
	assert.Contains(t, string(resp.Body), `<audio controls src=\"data:audio/ogg;base64,T2dnUw==\"`)
	msgs := ts.mustHistory(t, alice, thread)
	require.Len(t, msgs, 2)
	assert.Equal(t, "look", msgs[0].Message)

	// Files alone: deep-chat sends the conversation's earlier messages, not
	// the user's message of files.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreatePart(textproto.MIMEHeader{"Content-Disposition": {`form-data; name="files"; filename="c.png"`}, "Content-Type": {"image/png"}})
	require.NoError(t, err)
	_, _ = fw.Write([]byte(png))
	require.NoError(t, mw.WriteField("thread_id", thread))
	require.NoError(t, mw.WriteField("message1", `{"role":"user","text":"look"}`))
	require.NoError(t, mw.WriteField("message2", `{"role":"ai","html":"<p>look</p>"}`))
	require.NoError(t, mw.Close())
	resp = ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, body: buf.Bytes(), contentType: mw.FormDataContentType()})
	require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
	msgs = ts.mustHistory(t, alice, thread)
	require.Len(t, msgs, 4)
	assert.Equal(t, "", msgs[2].Message)
	assert.Len(t, msgs[2].ContentBlocks, 1)

	// Other files: a small one is an embedded resource, a larger one a
	// stored file of the thread, linked.
	bigPDF := "%PDF-1.7\n" + strings.Repeat("0", 20<<10)
	body, ct = multipartBody(t, thread, "read this", filePart{"a.pdf", "application/pdf", "%PDF"}, filePart{"b.pdf", "application/pdf", bigPDF})
	resp = ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, body: body, contentType: ct})
	require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
	msgs = ts.mustHistory(t, alice, thread)
	require.Len(t, msgs, 6)
	got := msgs[4].ContentBlocks
	require.Len(t, got, 2)
	assert.Equal(t, "resource", got[0]["type"])
	assert.Equal(t, "resource_link", got[1]["type"])
	uri, _ := got[1]["uri"].(string)
	require.True(t, strings.HasPrefix(uri, "chatd:file/"), uri)
	file := ts.do(t, testRequest{method: http.MethodGet, path: filePath(thread, strings.TrimPrefix(uri, "chatd:file/")), as: alice})
	require.Equal(t, http.StatusOK, file.Status)
	assert.Equal(t, bigPDF, string(file.Body))
	body, ct = multipartBody(t, thread, "fake", filePart{"c.pdf", "application/pdf", "<html>" + strings.Repeat(" ", 10<<10)})
	mustDeepChatError(t, ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, body: body, contentType: ct}),
		http.StatusUnprocessableEntity, "files[0]")
	body, ct = multipartBody(t, "", "hi")
	mustDeepChatError(t, ts.do(t, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, body: body, contentType: ct}),
		http.StatusBadRequest, "thread_id: required")
}

func TestDeepChatScript(t *testing.T) {
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.CORSOrigins = []string{"https://page.example"} }))
	resp := ts.do(t, testRequest{method: http.MethodGet, path: "/deep-chat/chatd.js", header: http.Header{"Origin": {"https://page.example"}}})
	require.Equal(t, http.StatusOK, resp.Status)
	assert.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "https://page.example", resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, string(resp.Body), "export const htmlClassUtilities")
}

// TestDeepChatStopOnDisconnect: deep-chat's stop button aborts the fetch,
// which stops a streamed turn; the stopped text is kept.
func TestDeepChatStopOnDisconnect(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := ts.newRequest(t, ctx, testRequest{method: http.MethodPost, path: "/v1/deep-chat", as: alice, header: sseAccept, body: deepChatBody(thread, longTurn)})
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, `data: {"html":"w "}`+"\n", line)
	cancel()
	waitFor(t, "the turn to stop", func() bool { return len(ts.mustHistory(t, alice, thread)) == 2 })
	history := ts.mustHistory(t, alice, thread)
	assert.Equal(t, true, history[1].Meta[blocks.MetaStopped])
}
