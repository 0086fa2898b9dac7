package agui_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/protocol"
	"chatd/internal/protocol/agui"
)

func input(rest string) string {
	return `{"threadId":"` + threadID + `","runId":"` + runID + `","state":{},"tools":[],"context":[],"forwardedProps":{"app":1},` + rest + `}`
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want agui.Request
	}{
		{
			name: "the last message's string content",
			body: input(`"messages":[{"id":"1","role":"user","content":"old"},{"id":"2","role":"assistant","content":"reply"},{"id":"3","role":"user","content":"Hello"}]`),
			want: agui.Request{ThreadID: threadID, RunID: runID, Text: "Hello"},
		},
		{
			name: "content parts: text joined, inline media as blocks",
			body: input(`"messages":[{"id":"3","role":"user","content":[{"type":"text","text":"Look"},` +
				`{"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"}},` +
				`{"type":"audio","source":{"type":"data","value":"UklGRg==","mimeType":"audio/wav"}},{"type":"text","text":"here"}]}]`),
			want: agui.Request{ThreadID: threadID, RunID: runID, Text: "Look\nhere", Blocks: []blocks.ContentBlock{
				blocks.MustBlock(blocks.Image("iVBORw0KGgo=", "image/png")),
				blocks.MustBlock(blocks.Audio("UklGRg==", "audio/wav")),
			}},
		},
		{
			name: "resume resolved answers, whatever the messages",
			body: input(`"messages":[{"id":"2","role":"assistant","content":"Sure?"}],"resume":[{"interruptId":"` + elicitID +
				`","status":"resolved","payload":{"action":"accept","content":{"n":1.50},"_meta":{"example.com/x":true}}}]`),
			want: agui.Request{ThreadID: threadID, RunID: runID, Answer: &protocol.Answer{ElicitationID: elicitID,
				Result: elicit.Result{Action: elicit.Accept, Content: map[string]any{"n": json.Number("1.50")}},
				Meta:   map[string]any{"example.com/x": true}}},
		},
		{
			name: "resume cancelled cancels",
			body: input(`"messages":[],"resume":[{"interruptId":"` + elicitID + `","status":"cancelled"}]`),
			want: agui.Request{ThreadID: threadID, RunID: runID, Answer: &protocol.Answer{ElicitationID: elicitID, Result: elicit.Result{Action: elicit.Cancel}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := agui.DecodeRequest([]byte(tt.body))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDecodeRequestRefuses(t *testing.T) {
	last := func(content string) string {
		return input(`"messages":[{"id":"1","role":"user","content":` + content + `}]`)
	}
	resume := func(entries string) string { return input(`"messages":[],"resume":` + entries) }
	tests := []struct {
		name   string
		body   string
		detail string
		fields []string
	}{
		{name: "not JSON", body: `{`, detail: "malformed RunAgentInput"},
		{name: "no threadId", body: `{"runId":"r","messages":[]}`, detail: "threadId: required"},
		{name: "no runId", body: `{"threadId":"t","messages":[]}`, detail: "runId: required"},
		{name: "messages not an array", body: `{"threadId":"t","runId":"r","messages":{}}`, detail: "messages"},
		{name: "no messages", body: input(`"messages":[]`), detail: "must end with the user's message"},
		{name: "the assistant last", body: input(`"messages":[{"id":"1","role":"assistant","content":"x"}]`), detail: "messages[0].role"},
		{name: "empty content", body: last(`""`), detail: "no text and no attachments"},
		{name: "content of the wrong type", body: last(`7`), detail: "must be a string or an array"},
		{name: "two resume entries", body: resume(`[{"interruptId":"a","status":"cancelled"},{"interruptId":"b","status":"cancelled"}]`), detail: "exactly one entry"},
		{name: "no interruptId", body: resume(`[{"status":"cancelled"}]`), detail: "interruptId: required"},
		{name: "an unknown status", body: resume(`[{"interruptId":"a","status":"maybe"}]`), detail: "resume[0].status"},
		{name: "resolved without payload", body: resume(`[{"interruptId":"a","status":"resolved"}]`), detail: "payload: required"},
		{name: "a payload that is not a result", body: resume(`[{"interruptId":"a","status":"resolved","payload":{"approved":true}}]`), detail: "must be an elicitation result"},
		{name: "a URL source", body: last(`[{"type":"image","source":{"type":"url","value":"https://example.com/a.png"}}]`), fields: []string{"messages[0].content[0].source"}},
		{name: "a video of another type", body: last(`[{"type":"video","source":{"type":"data","value":"AAAA","mimeType":"image/png"}}]`), fields: []string{"messages[0].content[0].source"}},
		{name: "a binary part without data", body: last(`[{"type":"binary","mimeType":"application/pdf","url":"https://example.com/a.pdf"}]`), fields: []string{"messages[0].content[0].data"}},
		{name: "bad base64 and a non-media type", body: last(`[{"type":"image","source":{"type":"data","value":"!","mimeType":"image/png"}},{"type":"audio","source":{"type":"data","value":"AAAA","mimeType":"text/plain"}}]`),
			fields: []string{"messages[0].content[0].source", "messages[0].content[1].source"}},
		{name: "a key given twice", body: last(`"a","content":"b"`), fields: []string{"messages[0].content"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agui.DecodeRequest([]byte(tt.body))
			require.Error(t, err)
			if tt.fields != nil {
				var verr *blocks.ValidationError
				require.ErrorAs(t, err, &verr)
				var fields []string
				for _, fe := range verr.Errors {
					fields = append(fields, fe.Field)
				}
				assert.ElementsMatch(t, tt.fields, fields)
				return
			}
			var ierr *protocol.InputError
			require.ErrorAs(t, err, &ierr)
			assert.Contains(t, ierr.Detail, tt.detail)
		})
	}
}
