package demo

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

func TestBookPausesWithForm(t *testing.T) {
	p := newTestProcessor(t)
	out := mustPause(t, p, "Book an event")
	req := out.Pause.Request

	assert.NotEmpty(t, req.ID)
	assert.Equal(t, req.ID, req.Meta[blocks.MetaElicitationID])
	assert.False(t, req.IsConfirm(), "a six-field form is not a confirm")
	schema := schemaOf(t, req)
	props, ok := schema["properties"].(map[string]any)
	require.True(t, ok)
	wantTypes := map[string]string{
		"title": "string", "date": "string", "attendees": "integer",
		"notify": "boolean", "room": "string", "email": "string",
	}
	require.Len(t, props, len(wantTypes))
	for name, typ := range wantTypes {
		prop, ok := props[name].(map[string]any)
		require.True(t, ok, "property %s", name)
		assert.Equal(t, typ, prop["type"], "property %s", name)
	}
	assert.ElementsMatch(t, []any{"title", "date", "attendees", "room"}, schema["required"])

	widgets := mustJSONObject(t, req.Meta)[blocks.MetaWidgets]
	assert.Equal(t, map[string]any{"widget": "datepicker"}, widgets.(map[string]any)["date"])

	var st pauseState
	require.NoError(t, json.Unmarshal(out.Pause.State, &st))
	assert.Equal(t, stepBook, st.Step)

	again := mustPause(t, p, "book")
	assert.NotEqual(t, req.ID, again.Pause.Request.ID, "every pause is a new elicitation")
}

func TestBookResumeAccept(t *testing.T) {
	tests := []struct {
		name      string
		attendees any
		extra     map[string]any
		wantText  []string
	}{
		{
			name:      "json.Number, defaults",
			attendees: json.Number("8"),
			wantText:  []string{`"Team retro"`, "2026-03-14", "Borealis", "8 people", "will be notified"},
		},
		{
			name:      "float64, no notification, email",
			attendees: float64(1),
			extra:     map[string]any{"notify": false, "email": "ada@example.com"},
			wantText:  []string{"1 person", "won't be notified", "ada@example.com"},
		},
		{
			name:      "int, notification and email",
			attendees: 50,
			extra:     map[string]any{"notify": true, "email": "ada@example.com"},
			wantText:  []string{"50 people", "will be notified", "ada@example.com"},
		},
	}
	p := newTestProcessor(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paused := mustPause(t, p, "book")
			content := map[string]any{
				"title": "Team retro", "date": "2026-03-14", "attendees": tt.attendees, "room": "Borealis",
			}
			for k, v := range tt.extra {
				content[k] = v
			}
			res := elicit.Result{Action: elicit.Accept, Content: content}
			require.NoError(t, paused.Pause.Request.Validate(res))

			out, _ := mustProcess(t, p, resumeInput(paused.Pause.Request, res, paused.Pause.State))
			assert.Nil(t, out.Pause)
			for _, want := range tt.wantText {
				assert.Contains(t, out.Text, want)
			}
			require.Len(t, out.Blocks, 1)
			card := mustJSONObject(t, out.Blocks[0])
			entity, ok := card["_meta"].(map[string]any)[blocks.MetaEntity].(map[string]any)
			require.True(t, ok, "the booked event is an entity card")
			assert.Equal(t, "event", entity["entity_type"])
			assert.Equal(t, "Team retro", card["title"])
			assert.Equal(t, "entity:event/"+entity["id"].(string), card["uri"])
			assert.Contains(t, out.Text, card["uri"])
			assert.NotEmpty(t, entity["uuid"])
			assert.Contains(t, out.Meta, blocks.MetaStatusItem)
			assert.NotEmpty(t, suggestedReplies(t, out))

			// The same booking is the same event: the identity comes from
			// the content, not from a counter or the clock.
			again, _ := mustProcess(t, p, resumeInput(paused.Pause.Request, res, paused.Pause.State))
			assert.Equal(t, card, mustJSONObject(t, again.Blocks[0]))
		})
	}
}

func TestBookIdentityDependsOnContent(t *testing.T) {
	id1, uuid1 := eventIdentity("Retro", "2026-03-14", "Aurora", 8)
	id2, uuid2 := eventIdentity("Retro", "2026-03-15", "Aurora", 8)
	assert.NotEqual(t, id1, id2)
	assert.NotEqual(t, uuid1, uuid2)
}

func TestBookResumeDeclineCancel(t *testing.T) {
	tests := []struct {
		action elicit.Action
		want   string
	}{
		{elicit.Decline, "no booking made"},
		{elicit.Cancel, "cancelled"},
	}
	p := newTestProcessor(t)
	for _, tt := range tests {
		t.Run(string(tt.action), func(t *testing.T) {
			paused := mustPause(t, p, "event")
			res := elicit.Result{Action: tt.action}
			require.NoError(t, paused.Pause.Request.Validate(res))
			out, _ := mustProcess(t, p, resumeInput(paused.Pause.Request, res, paused.Pause.State))
			assert.Contains(t, out.Text, tt.want)
			assert.Empty(t, out.Blocks)
			assert.Nil(t, out.Pause)
			assert.NotEmpty(t, suggestedReplies(t, out))
		})
	}
}

func TestDeleteConfirm(t *testing.T) {
	tests := []struct {
		name       string
		res        elicit.Result
		wantText   string
		wantStatus bool
	}{
		{"accept", elicit.Result{Action: elicit.Accept}, "Deleted 10 items.", true},
		{"accept with empty content", elicit.Result{Action: elicit.Accept, Content: map[string]any{}}, "Deleted 10 items.", true},
		{"decline", elicit.Result{Action: elicit.Decline}, "Nothing was deleted.", false},
		{"cancel", elicit.Result{Action: elicit.Cancel}, "Cancelled — nothing changed.", false},
	}
	p := newTestProcessor(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paused := mustPause(t, p, "delete")
			req := paused.Pause.Request
			assert.True(t, req.IsConfirm(), "delete asks a trivial confirm")
			assert.Equal(t, "Delete 10 items?", req.Message)
			require.NoError(t, req.Validate(tt.res))

			out, _ := mustProcess(t, p, resumeInput(req, tt.res, paused.Pause.State))
			assert.True(t, strings.HasPrefix(out.Text, tt.wantText), "text %q should start with %q", out.Text, tt.wantText)
			_, hasStatus := out.Meta[blocks.MetaStatusItem]
			assert.Equal(t, tt.wantStatus, hasStatus)
			assert.NotEmpty(t, suggestedReplies(t, out))
		})
	}
}

func TestTagsMultiSelect(t *testing.T) {
	p := newTestProcessor(t)
	paused := mustPause(t, p, "which topics?")
	req := paused.Pause.Request

	prop := schemaOf(t, req)["properties"].(map[string]any)["topics"].(map[string]any)
	assert.Equal(t, "array", prop["type"])
	assert.Equal(t, float64(1), prop["minItems"])
	assert.Equal(t, float64(3), prop["maxItems"])

	tooMany := elicit.Result{Action: elicit.Accept, Content: map[string]any{
		"topics": []any{"blocks", "citations", "elicitation", "streaming"},
	}}
	assert.Error(t, req.Validate(tooMany), "four topics exceed maxItems")

	res := elicit.Result{Action: elicit.Accept, Content: map[string]any{"topics": []any{"streaming", "blocks"}}}
	require.NoError(t, req.Validate(res))
	out, _ := mustProcess(t, p, resumeInput(req, res, paused.Pause.State))
	assert.Contains(t, out.Text, "You picked: Streaming, Content blocks.")
	assert.NotEmpty(t, suggestedReplies(t, out))

	declined, _ := mustProcess(t, p, resumeInput(req, elicit.Result{Action: elicit.Decline}, paused.Pause.State))
	assert.Contains(t, declined.Text, "No topics chosen")
}

func TestResumeWithUnknownStateAnswersKindly(t *testing.T) {
	p := newTestProcessor(t)
	paused := mustPause(t, p, "delete")
	for _, state := range [][]byte{nil, []byte("not json"), []byte(`{"step":"launch"}`)} {
		out, _ := mustProcess(t, p, resumeInput(paused.Pause.Request, elicit.Result{Action: elicit.Cancel}, state))
		assert.Contains(t, out.Text, "lost track")
		assert.NotEmpty(t, suggestedReplies(t, out))
	}
}
