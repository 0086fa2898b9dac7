package demo

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
)

func newTestProcessor(tb testing.TB) *Processor {
	tb.Helper()
	p := NewWithDelay(0)
	require.NoError(tb, p.fixedErr, "fixed demo content must build")
	return p
}

func userInput(text string) processor.Input {
	msg := blocks.NewMessage(blocks.RoleUser, text, nil, nil)
	return processor.Input{ThreadID: "thread-1", Principal: "alice", Message: &msg}
}

func resumeInput(req *elicit.Request, res elicit.Result, state []byte) processor.Input {
	return processor.Input{
		ThreadID:  "thread-1",
		Principal: "alice",
		Resume:    &processor.Resume{Request: req, Result: res, State: state},
	}
}

// mustProcess runs one turn and checks what every reply must satisfy: the
// deltas concatenate to the text, blocks survive an encode/decode round trip
// and the _meta keys are valid.
func mustProcess(tb testing.TB, p *Processor, in processor.Input) (processor.Output, []processor.Delta) {
	tb.Helper()
	var deltas []processor.Delta
	out, err := p.Process(context.Background(), in, func(d processor.Delta) { deltas = append(deltas, d) })
	require.NoError(tb, err)
	require.NotEmpty(tb, out.Text, "text is authoritative and must never be empty")

	var streamed strings.Builder
	for _, d := range deltas {
		streamed.WriteString(d.Text)
	}
	assert.Equal(tb, out.Text, streamed.String(), "deltas must concatenate to the text")

	if len(out.Blocks) > 0 {
		data, err := json.Marshal(out.Blocks)
		require.NoError(tb, err)
		decoded, err := blocks.DecodeList(data, "content_blocks")
		require.NoError(tb, err)
		again, err := json.Marshal(decoded)
		require.NoError(tb, err)
		assert.JSONEq(tb, string(data), string(again))
	}
	assert.NoError(tb, blocks.ValidateMeta(out.Meta, "_meta"))
	if out.Pause != nil {
		require.NotNil(tb, out.Pause.Request)
		data, err := json.Marshal(out.Pause.Request)
		require.NoError(tb, err)
		_, err = elicit.DecodeRequest(data)
		require.NoError(tb, err, "the paused request must decode as chatd would persist it")
	}
	return out, deltas
}

// mustJSONObject re-encodes v (a block or a _meta value) and decodes it as
// generic JSON, which is what a client sees.
func mustJSONObject(tb testing.TB, v any) map[string]any {
	tb.Helper()
	data, err := json.Marshal(v)
	require.NoError(tb, err)
	var out map[string]any
	require.NoError(tb, json.Unmarshal(data, &out))
	return out
}

func suggestedReplies(tb testing.TB, out processor.Output) []string {
	tb.Helper()
	v, ok := out.Meta[blocks.MetaSuggestedReplies]
	require.True(tb, ok, "reply should carry suggested replies")
	replies, ok := v.([]string)
	require.True(tb, ok, "suggested replies are an array of strings, got %T", v)
	return replies
}

// mustPause starts a turn that pauses and returns its output.
func mustPause(tb testing.TB, p *Processor, text string) processor.Output {
	tb.Helper()
	out, _ := mustProcess(tb, p, userInput(text))
	require.NotNil(tb, out.Pause, "%q should pause", text)
	return out
}

// schemaOf decodes a request's requestedSchema.
func schemaOf(tb testing.TB, req *elicit.Request) map[string]any {
	tb.Helper()
	var schema map[string]any
	require.NoError(tb, json.Unmarshal(req.RequestedSchema, &schema))
	return schema
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		text string
		want command
	}{
		{"help", cmdHelp},
		{"HELP!", cmdHelp},
		{"what commands are there?", cmdHelp},
		{"hello", cmdHelp},
		{"card", cmdCard},
		{"Show me a card", cmdCard},
		{"show article", cmdCard},
		{"cards please", cmdCard},
		{"show", cmdCard},
		{"sources", cmdSources},
		{"cite", cmdSources},
		{"Cite your sources.", cmdSources},
		{"book", cmdBook},
		{"EVENT", cmdBook},
		{"I'd like to book a meeting", cmdBook},
		{"delete", cmdDelete},
		{"remove them", cmdDelete},
		{"tags", cmdTags},
		{"Topics?", cmdTags},
		{"show me the topics", cmdTags},
		{"stream", cmdStream},
		{"tell me a story", cmdStream},
		{"delete the event", cmdDelete},
		{"", cmdUnknown},
		{"what is the weather", cmdUnknown},
		{"¿qué?", cmdUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			assert.Equal(t, tt.want, parseCommand(tt.text))
		})
	}
}

func TestSuggestionsRouteToTheirCommand(t *testing.T) {
	for _, s := range allSuggestions {
		assert.Equal(t, s.cmd, parseCommand(s.text), "suggested reply %q", s.text)
	}
}

func TestCommandsReply(t *testing.T) {
	tests := []struct {
		text       string
		wantPause  bool
		wantBlocks int
		wantInText []string
	}{
		{text: "help", wantInText: []string{"card", "sources", "book", "delete", "tags", "stream", "help"}},
		{text: "blah blah", wantInText: []string{"not sure", "card", "sources", "book", "delete", "tags"}},
		{text: "", wantInText: []string{"card", "sources"}},
		{text: "show article", wantBlocks: 1, wantInText: []string{"entity:node/42", cardTitle}},
		{text: "cite", wantBlocks: len(demoSources), wantInText: []string{"[1]", "[2]", "[3]"}},
		{text: "stream", wantInText: []string{"text.delta"}},
		{text: "book", wantPause: true, wantInText: []string{"title", "date", "attendees", "Aurora", "Borealis", "Cosmos"}},
		{text: "delete", wantPause: true, wantInText: []string{"Delete 10 items?"}},
		{text: "tags", wantPause: true, wantInText: []string{"Content blocks", "Streaming"}},
	}
	p := newTestProcessor(t)
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			out, deltas := mustProcess(t, p, userInput(tt.text))
			assert.Greater(t, len(deltas), 1, "a reply streams in several pieces")
			assert.Equal(t, tt.wantPause, out.Pause != nil)
			assert.Len(t, out.Blocks, tt.wantBlocks)
			for _, want := range tt.wantInText {
				assert.Contains(t, out.Text, want)
			}
			if !tt.wantPause {
				assert.NotEmpty(t, suggestedReplies(t, out))
			}
		})
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	p := newTestProcessor(t)
	out, _ := mustProcess(t, p, userInput("help"))

	replies := suggestedReplies(t, out)
	var routed []command
	for _, r := range replies {
		routed = append(routed, parseCommand(r))
	}
	assert.ElementsMatch(t, []command{cmdCard, cmdSources, cmdBook, cmdDelete, cmdTags, cmdStream}, routed)
	for _, word := range []string{"card", "sources", "book", "delete", "tags", "stream"} {
		assert.Contains(t, out.Text, "- "+word+":")
	}
}

func TestCardReply(t *testing.T) {
	p := newTestProcessor(t)
	out, _ := mustProcess(t, p, userInput("Show me a card"))
	require.Len(t, out.Blocks, 1)

	card := mustJSONObject(t, out.Blocks[0])
	assert.Equal(t, "resource_link", card["type"])
	assert.Equal(t, "entity:node/42", card["uri"])
	assert.Equal(t, cardTitle, card["title"], "block-unaware renderers show the label")
	meta, ok := card["_meta"].(map[string]any)
	require.True(t, ok, "entity card must carry _meta")
	assert.Equal(t, map[string]any{
		"entity_type": "node",
		"id":          "42",
		"uuid":        cardUUID,
		"view_mode":   "teaser",
	}, meta[blocks.MetaEntity])
}

func TestSourcesCitationsPointAtBlocks(t *testing.T) {
	p := newTestProcessor(t)
	out, deltas := mustProcess(t, p, userInput("sources"))

	require.NotEmpty(t, deltas)
	progress := mustJSONObject(t, deltas[0].Meta)[blocks.MetaStatusItem]
	outcome := mustJSONObject(t, out.Meta)[blocks.MetaStatusItem]
	require.NotNil(t, progress, "the first delta shows progress")
	require.NotNil(t, outcome, "the message shows the outcome")
	assert.Equal(t, "running", progress.(map[string]any)["state"])
	assert.Equal(t, "done", outcome.(map[string]any)["state"])
	assert.Equal(t, progress.(map[string]any)["id"], outcome.(map[string]any)["id"], "the outcome replaces the progress item")
	for _, d := range deltas[1:] {
		assert.Nil(t, d.Meta)
	}

	citations := mustJSONObject(t, out.Meta)[blocks.MetaCitations]
	list, ok := citations.([]any)
	require.True(t, ok, "citations are an array, got %T", citations)
	require.Len(t, list, len(demoSources))
	for i, c := range list {
		cite, ok := c.(map[string]any)
		require.True(t, ok)
		assert.NotEmpty(t, cite["title"])
		assert.NotEmpty(t, cite["snippet"])
		idx, ok := cite["block_index"].(float64)
		require.True(t, ok, "block_index is a number")
		require.Less(t, int(idx), len(out.Blocks), "citation %d points past the blocks", i)
		block := mustJSONObject(t, out.Blocks[int(idx)])
		assert.Equal(t, "resource_link", block["type"])
		assert.Equal(t, cite["uri"], block["uri"])
		assert.Contains(t, out.Text, cite["uri"], "block-unaware readers see every source")
	}
}

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

func TestProcessWithoutMessageFails(t *testing.T) {
	p := newTestProcessor(t)
	_, err := p.Process(context.Background(), processor.Input{ThreadID: "thread-1"}, func(processor.Delta) {})
	assert.Error(t, err)
}

func TestCancelledContextStopsStreaming(t *testing.T) {
	t.Run("before the first delta", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var deltas int
		_, err := newTestProcessor(t).Process(ctx, userInput("stream"), func(processor.Delta) { deltas++ })
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 0, deltas)
	})
	for _, delay := range []time.Duration{0, time.Hour} {
		t.Run("mid-stream, delay "+delay.String(), func(t *testing.T) {
			// With an hour between chunks the turn can only end because the
			// cancellation interrupts the wait.
			p := NewWithDelay(delay)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var deltas int
			_, err := p.Process(ctx, userInput("stream"), func(processor.Delta) {
				deltas++
				cancel()
			})
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, 1, deltas)
		})
	}
}

func TestChunksConcatenateToText(t *testing.T) {
	for _, text := range []string{"", "one", "one two three four", "  spaced  out  ", "line\nbreak and more words here", storyText} {
		got := chunks(text, wordsPerChunk)
		assert.Equal(t, text, strings.Join(got, ""))
		for _, c := range got {
			assert.NotEmpty(t, c)
		}
	}
}

func TestConcurrentTurns(t *testing.T) {
	p := newTestProcessor(t)
	var wg sync.WaitGroup
	for _, text := range []string{"help", "card", "sources", "book", "delete", "tags", "stream", "???"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := p.Process(context.Background(), userInput(text), func(processor.Delta) {})
			assert.NoError(t, err)
			assert.NotEmpty(t, out.Text)
		}()
	}
	wg.Wait()
}
