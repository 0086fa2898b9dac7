package blocks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestMessage(tb testing.TB) Message {
	tb.Helper()
	return Message{
		ID:        "0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b",
		Role:      RoleAssistant,
		Text:      "Here is the article.",
		Timestamp: time.Date(2025, 5, 3, 14, 30, 0, 123000000, time.UTC),
	}
}

func TestPlainMessageSerializesAsPlainRecord(t *testing.T) {
	m := newTestMessage(t)
	// The plain record a block-unaware consumer expects, built independently.
	// A thread's first message has a null parent_id.
	plain := struct {
		ID        string    `json:"id"`
		ParentID  *string   `json:"parent_id"`
		Role      string    `json:"role"`
		Message   string    `json:"message"`
		Timestamp time.Time `json:"timestamp"`
	}{m.ID, nil, string(m.Role), m.Text, m.Timestamp}
	want := mustMarshal(t, plain)
	assert.Equal(t, `{"id":"0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b","parent_id":null,"role":"assistant","message":"Here is the article.","timestamp":"2025-05-03T14:30:00.123Z"}`, string(want))

	for name, msg := range map[string]Message{
		"nil blocks and meta":   m,
		"empty blocks and meta": {ID: m.ID, Role: m.Role, Text: m.Text, Timestamp: m.Timestamp, ContentBlocks: []ContentBlock{}, Meta: map[string]any{}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, string(want), string(mustMarshal(t, msg)))
		})
	}
}

func TestMessageRoundTrip(t *testing.T) {
	card, err := EntityCard("node", "42", testUUID, "")
	require.NoError(t, err)
	withBlocks := newTestMessage(t)
	withBlocks.ContentBlocks = []ContentBlock{Text("Here is the article."), card}
	withBlocks.Meta = map[string]any{MetaSuggestedReplies: []any{"More like this", map[string]any{"label": "Thanks", "message": "Thank you!"}}}

	blocksOnly := newTestMessage(t)
	blocksOnly.Text = ""
	blocksOnly.ContentBlocks = []ContentBlock{card}

	metaOnly := newTestMessage(t)
	metaOnly.Meta = map[string]any{MetaElicitationID: testUUID}

	for name, m := range map[string]Message{"plain": newTestMessage(t), "blocks and meta": withBlocks, "blocks and empty text": blocksOnly, "meta only": metaOnly} {
		t.Run(name, func(t *testing.T) {
			data := mustMarshal(t, m)
			var back Message
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, m.ID, back.ID)
			assert.Equal(t, m.Role, back.Role)
			assert.Equal(t, m.Text, back.Text)
			assert.True(t, m.Timestamp.Equal(back.Timestamp))
			assert.Equal(t, len(m.ContentBlocks), len(back.Blocks()))
			assert.Equal(t, string(data), string(mustMarshal(t, back)))
		})
	}
}

func TestMessageDecodeValidatesStoredBlocks(t *testing.T) {
	data := `{"id":"x","role":"assistant","message":"","timestamp":"2025-05-03T14:30:00Z","content_blocks":[{"type":"text","text":"ok"},{"type":"image","data":"!","mimeType":"image/png"}]}`
	var m Message
	err := json.Unmarshal([]byte(data), &m)
	requireFieldErrors(t, []FieldError{{"data", "not valid base64"}}, err)
}

func TestMessageAccessors(t *testing.T) {
	m := NewMessage(RoleUser, "hi", []ContentBlock{Text("hi")}, map[string]any{MetaElicitationID: testUUID})
	id, err := uuid.Parse(m.ID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(7), id.Version())
	assert.Equal(t, time.UTC, m.Timestamp.Location())
	assert.Len(t, m.Blocks(), 1)
	v, ok := m.MetaValue(MetaElicitationID)
	assert.True(t, ok)
	assert.Equal(t, testUUID, v)
	_, ok = m.MetaValue(MetaCitations)
	assert.False(t, ok)
}
