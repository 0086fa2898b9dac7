package aisdk_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/protocol/aisdk"
	"chatd/internal/turn"
)

// recorder collects a stream's data lines.
type recorder struct{ lines []string }

func (r *recorder) write(data []byte) { r.lines = append(r.lines, string(data)) }

const (
	threadID  = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00"
	turnID    = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a0f"
	userID    = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10"
	messageID = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a11"
	elicitID  = "3f1c2b4a-9d8e-4c7b-a6f5-1e2d3c4b5a69"
)

var start = turn.Start{ThreadID: threadID, TurnID: turnID, MessageID: messageID, UserMessageID: userID}

func result(text string, list []blocks.ContentBlock, meta map[string]any) *turn.Result {
	return &turn.Result{
		ThreadID: threadID, TurnID: turnID, Status: turn.StatusCompleted,
		UserMessage: blocks.Message{ID: userID, Role: blocks.RoleUser},
		Message:     blocks.Message{ID: messageID, Role: blocks.RoleAssistant, Text: text, ContentBlocks: list, Meta: meta},
	}
}

func paused(params string, confirm bool) *turn.Result {
	r := result("Who are you?", nil, map[string]any{blocks.MetaElicitationID: elicitID})
	r.Status = turn.StatusInputRequired
	r.Elicitation = json.RawMessage(params)
	expires := blocks.Timestamp(time.Date(2026, 6, 1, 10, 15, 2, 0, time.UTC))
	r.ElicitationExpiresAt = &expires
	return r
}

const urlParams = `{"mode":"url","message":"Sign in","url":"https://example.com/login","_meta":{"drupal.org/ai.elicitation_id":"` + elicitID + `"}}`

const formParams = `{"message":"Who are you?","requestedSchema":{"type":"object","properties":{"age":{"type":"integer","maximum":1e3}}},"_meta":{"drupal.org/ai.elicitation_id":"` + elicitID + `"}}`

const meta = `{"chatd":{"thread_id":"` + threadID + `","turn_id":"` + turnID + `","message_id":"` + messageID + `","user_message_id":"` + userID + `","_meta":%s}}`

func metadata(m string) string {
	return `{"type":"message-metadata","messageMetadata":` + strings.Replace(meta, "%s", m, 1) + `}`
}

func TestStream(t *testing.T) {
	image := blocks.MustBlock(blocks.Image("iVBORw0KGgo=", "image/png"))
	link := blocks.MustBlock(blocks.Decode([]byte(`{"type":"resource_link","uri":"entity:node/1","name":"One","size":1.50,"annotations":{"priority":0}}`)))
	text := func(typ string, delta ...string) string {
		if len(delta) == 0 {
			return `{"type":"` + typ + `","id":"` + messageID + `"}`
		}
		return `{"type":"` + typ + `","id":"` + messageID + `","delta":` + mustJSON(t, delta[0]) + `}`
	}
	head := []string{`{"type":"start","messageId":"` + messageID + `"}`, `{"type":"start-step"}`}
	tail := func(reason string) []string {
		return []string{`{"type":"finish-step"}`, `{"type":"finish","finishReason":"` + reason + `"}`, "[DONE]"}
	}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name      string
		continues string
		run       func(s *aisdk.Stream)
		want      []string
	}{
		{
			name: "streamed text",
			run: func(s *aisdk.Stream) {
				s.Start(start)
				s.Delta("Hello ", nil)
				s.Delta("world", nil)
				s.Completed(result("Hello world", nil, nil))
			},
			want: join(head, []string{text("text-start"), text("text-delta", "Hello "), text("text-delta", "world"), text("text-end"), metadata(`{}`)}, tail("stop")),
		},
		{
			name: "text not streamed is sent as one delta",
			run: func(s *aisdk.Stream) {
				s.Start(start)
				s.Completed(result("All at once <b>&</b>", nil, nil))
			},
			want: join(head, []string{text("text-start"), text("text-delta", "All at once <b>&</b>"), text("text-end"), metadata(`{}`)}, tail("stop")),
		},
		{
			name: "a delta's _meta rides providerMetadata",
			run: func(s *aisdk.Stream) {
				s.Start(start)
				s.Delta("", nil) // nothing at all: no part
				s.Delta("", map[string]any{"drupal.org/ai.status_item": "thinking"})
				s.Delta("Hi", nil)
				s.Completed(result("Hi", nil, nil))
			},
			want: join(head, []string{
				text("text-start"),
				`{"type":"text-delta","id":"` + messageID + `","delta":"","providerMetadata":{"chatd":{"_meta":{"drupal.org/ai.status_item":"thinking"}}}}`,
				text("text-delta", "Hi"), text("text-end"), metadata(`{}`),
			}, tail("stop")),
		},
		{
			name: "blocks only: no text part, one data part per block, exact",
			run: func(s *aisdk.Stream) {
				s.Start(start)
				s.Completed(result("", []blocks.ContentBlock{image, link}, map[string]any{"drupal.org/ai.suggested_replies": []any{"More"}}))
			},
			want: join(head, []string{
				`{"type":"data-content-block","data":{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}}`,
				// Keys come in chatd's order; values digit for digit.
				`{"type":"data-content-block","data":{"type":"resource_link","annotations":{"priority":0},"name":"One","size":1.50,"uri":"entity:node/1"}}`,
				metadata(`{"drupal.org/ai.suggested_replies":["More"]}`),
			}, tail("stop")),
		},
		{
			name: "a pause is a call of the elicitation tool",
			run: func(s *aisdk.Stream) {
				s.Start(start)
				s.Delta("Who are you?", nil)
				s.Completed(paused(formParams, false))
			},
			want: join(head, []string{
				text("text-start"), text("text-delta", "Who are you?"), text("text-end"),
				metadata(`{"drupal.org/ai.elicitation_id":"` + elicitID + `"}`),
				`{"type":"tool-input-start","toolCallId":"` + elicitID + `","toolName":"elicitation"}`,
				`{"type":"tool-input-available","toolCallId":"` + elicitID + `","toolName":"elicitation","input":` + formParams + `}`,
			}, tail("tool-calls")),
		},
		{
			name: "a URL-mode question is a call of the elicitation tool with the page",
			run: func(s *aisdk.Stream) {
				s.Start(start)
				s.Completed(paused(urlParams, false))
			},
			want: join(head, []string{
				text("text-start"), text("text-delta", "Who are you?"), text("text-end"),
				metadata(`{"drupal.org/ai.elicitation_id":"` + elicitID + `"}`),
				`{"type":"tool-input-start","toolCallId":"` + elicitID + `","toolName":"elicitation"}`,
				`{"type":"tool-input-available","toolCallId":"` + elicitID + `","toolName":"elicitation","input":` + urlParams + `}`,
			}, tail("tool-calls")),
		},
		{
			name:      "an answer's reply continues the paused UI message",
			continues: "ui-message-7",
			run: func(s *aisdk.Stream) {
				s.Start(start)
				s.Completed(result(`{"action":"decline"}`, nil, nil))
			},
			want: join([]string{`{"type":"start","messageId":"ui-message-7"}`, `{"type":"start-step"}`},
				[]string{text("text-start"), text("text-delta", `{"action":"decline"}`), text("text-end"), metadata(`{}`)}, tail("stop")),
		},
		{
			name: "a replayed result without events",
			run: func(s *aisdk.Stream) {
				s.Completed(result("again", nil, nil))
			},
			want: join(head, []string{text("text-start"), text("text-delta", "again"), text("text-end"), metadata(`{}`)}, tail("stop")),
		},
		{
			name: "a failure mid-stream closes the text and ends with an error part",
			run: func(s *aisdk.Stream) {
				s.Start(start)
				s.Delta("Hal", nil)
				s.Error("the processor failed to answer (processor_failed)")
				s.Completed(result("ignored", nil, nil))
			},
			want: join(head, []string{text("text-start"), text("text-delta", "Hal"), text("text-end"),
				`{"type":"error","errorText":"the processor failed to answer (processor_failed)"}`, "[DONE]"}),
		},
		{
			name: "a failure before anything was sent",
			run: func(s *aisdk.Stream) {
				s.Error("thread not found (not_found)")
			},
			want: []string{`{"type":"error","errorText":"thread not found (not_found)"}`, "[DONE]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			tt.run(aisdk.NewStream(rec.write, tt.continues))
			assert.Equal(t, tt.want, rec.lines)
		})
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := blocks.Marshal(v)
	require.NoError(tb, err)
	return string(b)
}
