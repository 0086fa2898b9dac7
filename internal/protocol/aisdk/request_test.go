package aisdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/protocol"
	"chatd/internal/protocol/aisdk"
)

func chat(messages ...string) string {
	out := `{"id":"` + threadID + `","trigger":"submit-message","messageId":null,"extra":{"app":"own"},"messages":[`
	for i, m := range messages {
		if i > 0 {
			out += ","
		}
		out += m
	}
	return out + "]}"
}

const pausedAssistant = `{"id":"ui-1","role":"assistant","parts":[{"type":"step-start"},{"type":"text","text":"Who?","state":"done"},` +
	`{"type":"tool-elicitation","toolCallId":"` + elicitID + `","state":"output-available","input":{},"output":%s}]}`

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want aisdk.Request
	}{
		{
			name: "text parts of the last message, earlier messages ignored",
			body: chat(`{"id":"u0","role":"user","parts":[{"type":"text","text":"old"}]}`,
				`{"id":"u1","role":"user","parts":[{"type":"text","text":"Hello"},{"type":"step-start"},{"type":"text","text":"there"}]}`),
			want: aisdk.Request{ThreadID: threadID, Text: "Hello\nthere", UserMessageID: "u1"},
		},
		{
			name: "images and audio as data: URLs become blocks",
			body: chat(`{"id":"u1","role":"user","parts":[` +
				`{"type":"file","mediaType":"image/png","filename":"a.png","url":"data:image/png;base64,iVBORw0KGgo="},` +
				`{"type":"file","mediaType":"audio/wav","url":"data:audio/wav;base64,UklGRg=="},` +
				`{"type":"file","mediaType":"","url":"data:image/gif,GIF89a"},` +
				`{"type":"data-content-block","data":{"type":"text","text":"as is"}}]}`),
			want: aisdk.Request{ThreadID: threadID, UserMessageID: "u1", Blocks: []blocks.ContentBlock{
				blocks.MustBlock(blocks.Image("iVBORw0KGgo=", "image/png")),
				blocks.MustBlock(blocks.Audio("UklGRg==", "audio/wav")),
				blocks.MustBlock(blocks.Image("R0lGODlh", "image/gif")),
				blocks.Text("as is"),
			}},
		},
		{
			name: "the elicitation tool's output answers",
			body: chat(`{"id":"u1","role":"user","parts":[{"type":"text","text":"/elicit"}]}`,
				fmtPaused(`{"action":"accept","content":{"age":36.0},"_meta":{"example.com/x":1}}`)),
			want: aisdk.Request{ThreadID: threadID, Answer: &protocol.Answer{
				ElicitationID: elicitID, MessageID: "ui-1",
				Result: elicit.Result{Action: elicit.Accept, Content: map[string]any{"age": json.Number("36.0")}},
				Meta:   map[string]any{"example.com/x": json.Number("1")},
			}},
		},
		{
			name: "regenerate-message, the messages before the reply ignored",
			body: `{"id":"` + threadID + `","trigger":"regenerate-message","messageId":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a11",` +
				`"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"Hello"}]}]}`,
			want: aisdk.Request{ThreadID: threadID, Regenerate: true, RegenerateID: "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a11"},
		},
		{
			name: "regenerate-message without messageId: the head",
			body: `{"id":"` + threadID + `","trigger":"regenerate-message","messages":[]}`,
			want: aisdk.Request{ThreadID: threadID, Regenerate: true},
		},
		{
			name: "a dynamic tool named elicitation, continuing the request's messageId",
			body: `{"id":"` + threadID + `","messageId":"ui-9","messages":[{"id":"ui-1","role":"assistant","parts":[` +
				`{"type":"dynamic-tool","toolName":"elicitation","toolCallId":"` + elicitID + `","state":"output-available","output":{"action":"decline"}}]}]}`,
			want: aisdk.Request{ThreadID: threadID, Answer: &protocol.Answer{ElicitationID: elicitID, MessageID: "ui-9", Result: elicit.Result{Action: elicit.Decline}}},
		},
		{
			name: "an output-error cancels",
			body: chat(`{"id":"ui-1","role":"assistant","parts":[{"type":"tool-elicitation","toolCallId":"` + elicitID + `","state":"output-error","errorText":"closed"}]}`),
			want: aisdk.Request{ThreadID: threadID, Answer: &protocol.Answer{ElicitationID: elicitID, MessageID: "ui-1", Result: elicit.Result{Action: elicit.Cancel}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := aisdk.DecodeRequest([]byte(tt.body))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func fmtPaused(output string) string { return strings.Replace(pausedAssistant, "%s", output, 1) }

func TestDecodeRequestRefuses(t *testing.T) {
	user := func(parts string) string { return chat(`{"id":"u1","role":"user","parts":[` + parts + `]}`) }
	tests := []struct {
		name   string
		body   string
		detail string   // an *InputError containing this
		fields []string // or a *ValidationError with these fields
	}{
		{name: "not JSON", body: `{"id":`, detail: "malformed chat request"},
		{name: "not an object", body: `[]`, detail: "malformed chat request"},
		{name: "no id", body: `{"messages":[{"role":"user","parts":[{"type":"text","text":"x"}]}]}`, detail: "id: required"},
		{name: "id of the wrong type", body: `{"id":7,"messages":[]}`, detail: "id"},
		{name: "no messages", body: `{"id":"` + threadID + `","messages":[]}`, detail: "messages: must hold"},
		{name: "regenerate naming no message", body: `{"id":"` + threadID + `","trigger":"regenerate-message","messageId":7,"messages":[]}`, detail: "messageId"},
		{name: "unknown trigger", body: `{"id":"` + threadID + `","trigger":"resume-stream","messages":[{"role":"user","parts":[]}]}`, detail: "trigger"},
		{name: "a system message last", body: chat(`{"id":"s","role":"system","parts":[{"type":"text","text":"x"}]}`), detail: "messages[0].role"},
		{name: "nothing to say", body: user(`{"type":"step-start"}`), detail: "no text and no attachments"},
		{name: "a text part without text", body: user(`{"type":"text"}`), detail: "messages[0].parts[0].text: required"},
		{name: "a part that is not an object", body: user(`"hello"`), detail: "messages[0].parts[0]"},
		{name: "an assistant message without the tool", body: chat(`{"id":"a","role":"assistant","parts":[{"type":"text","text":"x"}]}`), detail: "holds no \"elicitation\" tool output"},
		{name: "a tool call still waiting", body: chat(`{"id":"a","role":"assistant","parts":[{"type":"tool-elicitation","toolCallId":"x","state":"input-available"}]}`), detail: "has no output yet"},
		{name: "an output that is not a result", body: chat(fmtPaused(`{"action":"accept","extra":1}`)), detail: "must be an elicitation result"},
		{name: "an output of the wrong shape", body: chat(fmtPaused(`"yes"`)), detail: "must be an elicitation result"},
		{name: "a link, not data", body: user(`{"type":"file","mediaType":"image/png","url":"https://example.com/a.png"}`), fields: []string{"messages[0].parts[0].url"}},
		{name: "a PDF that is not base64", body: user(`{"type":"file","mediaType":"application/pdf","url":"data:application/pdf;base64,!!"}`), fields: []string{"messages[0].parts[0].url"}},
		{name: "a file link that is not a URI", body: user(`{"type":"file","mediaType":"application/pdf","url":"chatd:file/ x"}`), fields: []string{"messages[0].parts[0].url"}},
		{name: "bad base64", body: user(`{"type":"file","mediaType":"image/png","url":"data:image/png;base64,!!!"},{"type":"file","mediaType":"image/png","url":"data:image/png;base64"}`), fields: []string{"messages[0].parts[0].url", "messages[0].parts[1].url"}},
		{name: "an invalid block", body: user(`{"type":"data-content-block","data":{"type":"image","data":"x"}}`), fields: []string{"messages[0].parts[0].data.data", "messages[0].parts[0].data.mimeType"}},
		{name: "a key given twice", body: user(`{"type":"text","text":"a","text":"b"}`), fields: []string{"messages[0].parts[0].text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := aisdk.DecodeRequest([]byte(tt.body))
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
