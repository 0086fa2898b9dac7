package ui_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeepChatFiles sends files with a message through the real deep-chat
// element (its multipart body): an image becomes an image block, a small
// text file an embedded resource, and a larger PDF a file stored on the
// thread, linked, which its owner can download.
func TestDeepChatFiles(t *testing.T) {
	s := newDeepChatSite(t)
	thread := s.newThread(t, "echo")
	s.open(t, thread)
	n := s.aiCount(t)
	s.tab.do(t, chromedp.Evaluate[chromedp.Void](inChat(`chat.submitUserMessage({text: "read these", files: [
		new File([Uint8Array.from(atob("iVBORw0KGgo="), (c) => c.charCodeAt(0))], "dot.png", { type: "image/png" }),
		new File(["short notes"], "notes.txt", { type: "text/plain" }),
		new File(["%PDF-1.7\n" + "0".repeat(20480)], "report.pdf", { type: "application/pdf" }),
	]})`)))
	s.waitAI(t, n, "read these")

	req, err := http.NewRequest(http.MethodGet, s.chatd.URL+"/v1/threads/"+thread+"/messages", nil)
	require.NoError(t, err)
	req.Header.Set("X-Chatd-Principal", "browser-user")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var page struct {
		Messages []struct {
			Message       string           `json:"message"`
			ContentBlocks []map[string]any `json:"content_blocks"`
		} `json:"messages"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	require.NotEmpty(t, page.Messages)
	sent := page.Messages[len(page.Messages)-2]
	assert.Equal(t, "read these", sent.Message)
	require.Len(t, sent.ContentBlocks, 3)
	assert.Equal(t, "image", sent.ContentBlocks[0]["type"])
	assert.Equal(t, "resource", sent.ContentBlocks[1]["type"])
	link := sent.ContentBlocks[2]
	assert.Equal(t, "resource_link", link["type"])
	assert.Equal(t, "report.pdf", link["name"])
	uri, _ := link["uri"].(string)
	require.True(t, strings.HasPrefix(uri, "chatd:file/"), uri)

	get, err := http.NewRequest(http.MethodGet, s.chatd.URL+"/v1/threads/"+thread+"/files/"+strings.TrimPrefix(uri, "chatd:file/"), nil)
	require.NoError(t, err)
	get.Header.Set("X-Chatd-Principal", "browser-user")
	file, err := http.DefaultClient.Do(get)
	require.NoError(t, err)
	defer file.Body.Close()
	assert.Equal(t, http.StatusOK, file.StatusCode)
	assert.Equal(t, "application/pdf", file.Header.Get("Content-Type"))
	s.checkOrigins(t)
	s.tab.checkQuiet(t)
}
