package deepchat

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/elicit"
	"chatd/internal/protocol"
)

func TestDecodeJSON(t *testing.T) {
	req, err := DecodeJSON([]byte(`{"messages":[{"role":"user","text":"a"},{"role":"ai","text":"b"},{"role":"user","text":"c"}],"thread_id":"t1","other":1}`))
	require.NoError(t, err)
	assert.Equal(t, Request{ThreadID: "t1", Text: "c"}, req)

	for _, body := range []string{
		`{"messages":`,
		`{"messages":[{"role":"user","text":"hi"}]}`,
		`{"messages":[{"role":"user","text":"hi"}],"thread_id":""}`,
		`{"messages":[],"thread_id":"t1"}`,
		`{"messages":[{"role":"ai","text":"hi"}],"thread_id":"t1"}`,
		`{"messages":[{"role":"user","text":""}],"thread_id":"t1"}`,
		`{"messages":[{"role":"user","text":1}],"thread_id":"t1"}`,
	} {
		_, err := DecodeJSON([]byte(body))
		var ierr *protocol.InputError
		assert.ErrorAs(t, err, &ierr, body)
	}
}

func TestChoices(t *testing.T) {
	params := func(schema string) json.RawMessage {
		return json.RawMessage(`{"message":"?","requestedSchema":` + schema + `,"_meta":{"drupal.org/ai.elicitation_id":"e1"}}`)
	}
	titles := func(cs []Choice) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Title)
		}
		return out
	}
	confirm := Choices(params(`{"type":"object","properties":{}}`))
	assert.Equal(t, []string{"Yes", "No"}, titles(confirm))
	assert.Equal(t, elicit.Decline, confirm[1].Result.Action)
	one := Choices(params(`{"type":"object","properties":{"r":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b"}]}},"required":["r"]}`))
	assert.Equal(t, []string{"A", "b"}, titles(one))
	assert.Equal(t, map[string]any{"r": "b"}, one[1].Result.Content)
	c, ok := Match(one, "A")
	assert.True(t, ok)
	assert.Equal(t, map[string]any{"r": "a"}, c.Result.Content)
	_, ok = Match(one, "a")
	assert.False(t, ok, "a title, not a value")
	assert.Nil(t, Choices(params(`{"type":"object","properties":{"r":{"type":"string","enum":["a"]}}}`)), "not required")
	assert.Nil(t, Choices(params(`{"type":"object","properties":{"r":{"type":"string"}},"required":["r"]}`)), "free text")
	assert.Nil(t, Choices(params(`{"type":"object","properties":{"r":{"type":"string","enum":["a"]},"s":{"type":"boolean"}},"required":["r"]}`)), "two fields")
	assert.Nil(t, Choices(nil))

	page := Choices(json.RawMessage(`{"mode":"url","message":"Sign in","url":"https://example.com/login","elicitationId":"s1","_meta":{"drupal.org/ai.elicitation_id":"e1"}}`))
	assert.Equal(t, []string{"Done", "Cancel"}, titles(page))
	assert.Equal(t, elicit.Result{Action: elicit.Accept}, page[0].Result, "accept with no content: the user visited the page")
	assert.Equal(t, elicit.Result{Action: elicit.Cancel}, page[1].Result)
	// A URL chatd does not link to can only be cancelled (a stored
	// question was checked when asked; this guards what a store returns).
	assert.Equal(t, []string{"Cancel"}, titles(Choices(json.RawMessage(`{"mode":"url","message":"x","url":"javascript:alert(1)","_meta":{"drupal.org/ai.elicitation_id":"e1"}}`))))
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","text":"hi"}],"thread_id":"t1"}`))
	f.Add([]byte(`{"messages":[{"role":"user","text":"\u0000"}],"thread_id":"t1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeJSON(data)
		if err == nil && (req.ThreadID == "" || req.Text == "") {
			t.Fatalf("accepted %q as %+v", data, req)
		}
	})
}
