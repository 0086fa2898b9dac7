package agent_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/processor/agent"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// Bytes with real signatures, as uploads sniff them.
var (
	inputPNG = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{3}, 40)...)
	inputWAV = append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), bytes.Repeat([]byte{0}, 32)...)
	inputPDF = []byte("%PDF-1.7\n%\xe2\xe3\n1 0 obj\n<<>>\nendobj\n")
)

// storeReader reads files from the store chatd serves, as cmd/chatd wires
// the agents.
type storeReader struct {
	st interface {
		GetFile(ctx context.Context, threadID, principal, fileID string) (store.File, []byte, error)
	}
}

func (r storeReader) ReadFile(ctx context.Context, threadID, principal, fileID string) (agent.StoredFile, error) {
	f, data, err := r.st.GetFile(ctx, threadID, principal, fileID)
	return agent.StoredFile{Name: f.Name, MIMEType: f.MIMEType, Data: data}, err
}

// mustUpload uploads data as the raw body and returns the file's URI.
func (c *chatd) mustUpload(tb testing.TB, thread, name, contentType string, data []byte) string {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, c.URL+"/v1/threads/"+thread+"/files?name="+name, bytes.NewReader(data))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", contentType)
	resp, err := c.Client().Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	body := c.v.Check(tb, resp)
	require.Equal(tb, http.StatusCreated, resp.StatusCode, "%s", body)
	var f struct{ URI string }
	require.NoError(tb, json.Unmarshal(body, &f))
	return f.URI
}

// newInputsChatd serves an agent with the given inputs over a memory store
// it reads files from.
func newInputsChatd(tb testing.TB, m *fakeModel, inputs []string, textBytes int) *chatd {
	tb.Helper()
	st := store.NewMemory(testStoreOpts)
	tb.Cleanup(func() { _ = st.Close() })
	cfg := agentConfig(m)
	cfg.AskUser = false
	cfg.Inputs, cfg.TextFileBytes, cfg.Files = inputs, textBytes, storeReader{st}
	return newChatd(tb, st, mustAgent(tb, cfg), turn.DefaultConfig)
}

func link(uri, name, mime string) map[string]any {
	return map[string]any{"type": "resource_link", "uri": uri, "name": name, "mimeType": mime}
}

// attachmentTurn uploads one file of each kind and sends them, with an
// inline image and an embedded text resource, in one turn; it returns what
// the model was sent as the user's message.
func attachmentTurn(t *testing.T, inputs []string, textBytes int) any {
	m := newFakeModel(t, textReply("I see."))
	c := newInputsChatd(t, m, inputs, textBytes)
	thread := c.mustThread(t)
	png := c.mustUpload(t, thread, "shot.png", "image/png", inputPNG)
	wav := c.mustUpload(t, thread, "hello.wav", "audio/wav", inputWAV)
	pdf := c.mustUpload(t, thread, "report.pdf", "application/pdf", inputPDF)
	notes := c.mustUpload(t, thread, "notes.txt", "text/plain", []byte("hello é world"))
	status, body := c.do(t, http.MethodPost, "/v1/threads/"+thread+"/turns", map[string]any{
		"message": "what's wrong here?",
		"content_blocks": []map[string]any{
			{"type": "image", "data": base64.StdEncoding.EncodeToString(inputPNG), "mimeType": "image/png"},
			link(png, "shot.png", "image/png"),
			link(wav, "hello.wav", "audio/wav"),
			link(pdf, "report.pdf", "application/pdf"),
			link(notes, "notes.txt", "text/plain"),
			{"type": "resource", "resource": map[string]any{"uri": "note://1", "mimeType": "text/plain", "text": "a resource's text"}},
		},
	})
	require.Equal(t, http.StatusOK, status, "%s", body)
	sent := m.sent()
	require.Len(t, sent, 1)
	require.Len(t, sent[0].Messages, 1)
	assert.Equal(t, "user", sent[0].Messages[0]["role"])
	return sent[0].Messages[0]["content"]
}

func TestAgentInputsGiveTheModelTheFiles(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	got := attachmentTurn(t, []string{agent.InputImage, agent.InputAudio, agent.InputFile}, 7)
	want := []any{
		map[string]any{"type": "text", "text": "what's wrong here?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + b64(inputPNG)}},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + b64(inputPNG)}},
		map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": b64(inputWAV), "format": "wav"}},
		map[string]any{"type": "file", "file": map[string]any{"file_data": "data:application/pdf;base64," + b64(inputPDF), "filename": "report.pdf"}},
		// 7 bytes of text, cut before the two-byte é would be split.
		map[string]any{"type": "text", "text": "[file notes.txt (text/plain)]\nhello \n[truncated: 8 more bytes]\n" +
			"[resource <note://1>]\na resou\n[truncated: 10 more bytes]"},
	}
	assert.Equal(t, want, got)
}

func TestAgentInputsNotListedStaySummaries(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	got := attachmentTurn(t, []string{agent.InputImage}, 0)
	want := []any{
		map[string]any{"type": "text", "text": "what's wrong here?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + b64(inputPNG)}},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + b64(inputPNG)}},
		map[string]any{"type": "text", "text": "[link: hello.wav <" + "chatd:file/"},
	}
	require.IsType(t, []any{}, got)
	parts := got.([]any)
	require.Len(t, parts, 4)
	assert.Equal(t, want[:3], parts[:3])
	text := parts[3].(map[string]any)["text"].(string)
	assert.True(t, strings.HasPrefix(text, "[link: hello.wav <chatd:file/"), "%s", text)
	assert.Contains(t, text, "[link: report.pdf <chatd:file/")
	assert.Contains(t, text, "[link: notes.txt <chatd:file/")
	assert.Contains(t, text, "[resource <note://1>]\na resource's text", "a text resource is given whole within the bound")
}

func TestAgentWithoutInputsSummarizes(t *testing.T) {
	got := attachmentTurn(t, nil, 0)
	text, ok := got.(string)
	require.True(t, ok, "the message is text: %v", got)
	assert.True(t, strings.HasPrefix(text, "what's wrong here?\n[image: image/png]\n[link: shot.png <chatd:file/"), "%s", text)
	assert.NotContains(t, text, "data:")
}

func TestNewChecksInputs(t *testing.T) {
	cfg := agentConfig(newFakeModel(t))
	cfg.Inputs = []string{"video"}
	_, err := agent.New(cfg)
	assert.ErrorContains(t, err, `input "video"`)
}

// TestAgentReadsFilesOnAnyInstance uploads a file through one instance and
// runs the turn that links it on another, over one Redis: the agent reads
// the file from the store when its turn runs.
func TestAgentReadsFilesOnAnyInstance(t *testing.T) {
	srv := redistest.Start(t)
	m := newFakeModel(t, textReply("A dot."))
	instance := func() *chatd {
		st := openRedisStore(t, srv)
		cfg := agentConfig(m)
		cfg.AskUser = false
		cfg.Inputs, cfg.Files = []string{agent.InputImage}, storeReader{st}
		return newChatd(t, st, mustAgent(t, cfg), turn.DefaultConfig)
	}
	first, second := instance(), instance()
	thread := first.mustThread(t)
	uri := first.mustUpload(t, thread, "dot.png", "image/png", inputPNG)
	status, body := second.do(t, http.MethodPost, "/v1/threads/"+thread+"/turns", map[string]any{
		"message": "what is this?", "content_blocks": []map[string]any{link(uri, "dot.png", "image/png")},
	})
	require.Equal(t, http.StatusOK, status, "%s", body)
	sent := m.sent()
	require.Len(t, sent, 1)
	assert.Equal(t, []any{
		map[string]any{"type": "text", "text": "what is this?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(inputPNG)}},
	}, sent[0].Messages[0]["content"])
}
