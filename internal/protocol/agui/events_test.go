package agui_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"chatd/internal/blocks"
	"chatd/internal/protocol/agui"
	"chatd/internal/turn"
)

type recorder struct{ lines []string }

func (r *recorder) write(data []byte) { r.lines = append(r.lines, string(data)) }

const (
	threadID  = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00"
	runID     = "run-1"
	turnID    = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a0f"
	userID    = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10"
	messageID = "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a11"
	elicitID  = "3f1c2b4a-9d8e-4c7b-a6f5-1e2d3c4b5a69"
)

var start = turn.Start{ThreadID: threadID, TurnID: turnID, MessageID: messageID, UserMessageID: userID}

func result(status, text string, list []blocks.ContentBlock, meta map[string]any) *turn.Result {
	return &turn.Result{
		ThreadID: threadID, TurnID: turnID, Status: status,
		UserMessage: blocks.Message{ID: userID, Role: blocks.RoleUser},
		Message:     blocks.Message{ID: messageID, Role: blocks.RoleAssistant, Text: text, ContentBlocks: list, Meta: meta},
	}
}

func paused(params string) *turn.Result {
	r := result(turn.StatusInputRequired, "Sure?", nil, map[string]any{blocks.MetaElicitationID: elicitID})
	r.Elicitation = json.RawMessage(params)
	expires := blocks.Timestamp(time.Date(2026, 6, 1, 10, 15, 2, 500e6, time.UTC))
	r.ElicitationExpiresAt = &expires
	return r
}

func TestRun(t *testing.T) {
	started := `{"type":"RUN_STARTED","threadId":"` + threadID + `","runId":"` + runID + `"}`
	textStart := `{"type":"TEXT_MESSAGE_START","messageId":"` + messageID + `","role":"assistant"}`
	content := func(delta string) string {
		return `{"type":"TEXT_MESSAGE_CONTENT","messageId":"` + messageID + `","delta":"` + delta + `"}`
	}
	textEnd := `{"type":"TEXT_MESSAGE_END","messageId":"` + messageID + `"}`
	finished := func(status, outcome string) string {
		return `{"type":"RUN_FINISHED","threadId":"` + threadID + `","runId":"` + runID + `","result":{"thread_id":"` + threadID +
			`","turn_id":"` + turnID + `","message_id":"` + messageID + `","user_message_id":"` + userID + `","status":"` + status + `"},"outcome":` + outcome + `}`
	}
	success := finished("completed", `{"type":"success"}`)
	form := `{"message":"Sure?","requestedSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1.50}}},"_meta":{"drupal.org/ai.elicitation_id":"` + elicitID + `","drupal.org/ai.widgets":{"n":{"widget":"slider"}}}}`
	confirm := `{"message":"Sure?","requestedSchema":{"type":"object","properties":{}},"_meta":{"drupal.org/ai.elicitation_id":"` + elicitID + `"}}`
	card := blocks.MustBlock(blocks.Decode([]byte(`{"type":"resource_link","uri":"entity:node/1","name":"One","_meta":{"drupal.org/ai.entity":{"entity_type":"node","id":"1","uuid":"","view_mode":"teaser"}}}`)))
	tests := []struct {
		name string
		run  func(r *agui.Run)
		want []string
	}{
		{
			name: "streamed text",
			run: func(r *agui.Run) {
				r.Started()
				r.Start(start)
				r.Delta("Hello ", map[string]any{"example.com/step": 1})
				r.Delta("", map[string]any{"example.com/step": 2}) // no text: no event
				r.Delta("world", nil)
				r.Completed(result(turn.StatusCompleted, "Hello world", nil, nil))
			},
			want: []string{started, textStart,
				`{"type":"TEXT_MESSAGE_CONTENT","messageId":"` + messageID + `","delta":"Hello ","metadata":{"_meta":{"example.com/step":1}}}`,
				content("world"), textEnd, success},
		},
		{
			name: "a status item without text is a chatd.status_item custom event",
			run: func(r *agui.Run) {
				r.Started()
				r.Start(start)
				r.Delta("", map[string]any{"drupal.org/ai.status_item": map[string]any{"id": "c1", "label": "Running", "state": "running",
					"progress": json.Number("2.50"), "total": json.Number("1e1")}})
				r.Completed(result(turn.StatusCompleted, "", nil, nil))
			},
			want: []string{started,
				`{"type":"CUSTOM","name":"chatd.status_item","value":{"id":"c1","label":"Running","progress":2.50,"state":"running","total":1e1}}`,
				success},
		},
		{
			name: "text not streamed is sent as one content event",
			run: func(r *agui.Run) {
				r.Started()
				r.Start(start)
				r.Completed(result(turn.StatusCompleted, "At once", nil, nil))
			},
			want: []string{started, textStart, content("At once"), textEnd, success},
		},
		{
			name: "blocks and _meta as the chatd.content_blocks custom event",
			run: func(r *agui.Run) {
				r.Started()
				r.Start(start)
				r.Completed(result(turn.StatusCompleted, "", []blocks.ContentBlock{card}, map[string]any{"drupal.org/ai.suggested_replies": []any{"More"}}))
			},
			want: []string{started,
				`{"type":"CUSTOM","name":"chatd.content_blocks","value":{"message_id":"` + messageID + `","content_blocks":[{"type":"resource_link","_meta":{"drupal.org/ai.entity":{"entity_type":"node","id":"1","uuid":"","view_mode":"teaser"}},"name":"One","uri":"entity:node/1"}],"_meta":{"drupal.org/ai.suggested_replies":["More"]}}}`,
				success},
		},
		{
			name: "a form is an input_required interrupt",
			run: func(r *agui.Run) {
				r.Started()
				r.Start(start)
				r.Delta("Sure?", nil)
				r.Completed(paused(form))
			},
			want: []string{started, textStart, content("Sure?"), textEnd,
				`{"type":"CUSTOM","name":"chatd.content_blocks","value":{"message_id":"` + messageID + `","content_blocks":[],"_meta":{"drupal.org/ai.elicitation_id":"` + elicitID + `"}}}`,
				finished("input_required", `{"type":"interrupt","interrupts":[{"id":"`+elicitID+`","reason":"input_required","message":"Sure?",`+
					`"responseSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1.50}}},"expiresAt":"2026-06-01T10:15:02.500Z",`+
					`"metadata":{"_meta":{"drupal.org/ai.elicitation_id":"`+elicitID+`","drupal.org/ai.widgets":{"n":{"widget":"slider"}}}}}]}`)},
		},
		{
			name: "an empty schema is a confirmation",
			run: func(r *agui.Run) {
				r.Started()
				r.Start(start)
				r.Completed(paused(confirm))
			},
			want: []string{started, textStart, content("Sure?"), textEnd,
				`{"type":"CUSTOM","name":"chatd.content_blocks","value":{"message_id":"` + messageID + `","content_blocks":[],"_meta":{"drupal.org/ai.elicitation_id":"` + elicitID + `"}}}`,
				finished("input_required", `{"type":"interrupt","interrupts":[{"id":"`+elicitID+`","reason":"confirmation","message":"Sure?",`+
					`"responseSchema":{"type":"object","properties":{}},"expiresAt":"2026-06-01T10:15:02.500Z",`+
					`"metadata":{"_meta":{"drupal.org/ai.elicitation_id":"`+elicitID+`"}}}]}`)},
		},
		{
			name: "a URL-mode question is a url interrupt with the page in metadata.url",
			run: func(r *agui.Run) {
				r.Started()
				r.Start(start)
				r.Completed(paused(`{"mode":"url","message":"Sign in","url":"https://example.com/login?a=1&b=2","elicitationId":"srv-1","_meta":{"drupal.org/ai.elicitation_id":"` + elicitID + `"}}`))
			},
			want: []string{started, textStart, content("Sure?"), textEnd,
				`{"type":"CUSTOM","name":"chatd.content_blocks","value":{"message_id":"` + messageID + `","content_blocks":[],"_meta":{"drupal.org/ai.elicitation_id":"` + elicitID + `"}}}`,
				finished("input_required", `{"type":"interrupt","interrupts":[{"id":"`+elicitID+`","reason":"url","message":"Sign in",`+
					`"responseSchema":null,"expiresAt":"2026-06-01T10:15:02.500Z",`+
					`"metadata":{"_meta":{"drupal.org/ai.elicitation_id":"`+elicitID+`"},"url":"https://example.com/login?a=1&b=2","elicitationId":"srv-1"}}]}`)},
		},
		{
			name: "a replayed result without events",
			run: func(r *agui.Run) {
				r.Started()
				r.Completed(result(turn.StatusCompleted, "again", nil, nil))
			},
			want: []string{started, textStart, content("again"), textEnd, success},
		},
		{
			name: "a failure mid-stream ends the text, then RUN_ERROR",
			run: func(r *agui.Run) {
				r.Started()
				r.Start(start)
				r.Delta("Hal", nil)
				r.Error("processor_failed", "the processor failed to answer", nil)
				r.Completed(result(turn.StatusCompleted, "ignored", nil, nil))
			},
			want: []string{started, textStart, content("Hal"), textEnd,
				`{"type":"RUN_ERROR","message":"the processor failed to answer","code":"processor_failed"}`},
		},
		{
			name: "a refusal before the run started, with field errors",
			run: func(r *agui.Run) {
				r.Error("validation_failed", "the request has invalid fields; see errors", []blocks.FieldError{{Field: "age", Detail: "must be at least 0"}})
			},
			want: []string{`{"type":"RUN_ERROR","message":"the request has invalid fields; see errors","code":"validation_failed","metadata":{"errors":[{"field":"age","detail":"must be at least 0"}]}}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			tt.run(agui.NewRun(rec.write, threadID, runID))
			assert.Equal(t, tt.want, rec.lines)
		})
	}
}
