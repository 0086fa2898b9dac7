package elicit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

func TestCheckURL(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", elicit.MaxURLLen-len("https://example.com/"))
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://example.com/login?next=/a#b", true},
		{"https://EXAMPLE.com:8443/", true},
		{"http://127.0.0.1:8080/consent", true},
		{"http://127.9.9.9/", true},
		{"http://[::1]:3000/x", true},
		{"http://localhost/x", true},
		{"http://LocalHost:80/x", true},
		{long, true},
		{long + "a", false},
		{"http://example.com/login", false},
		{"http://128.0.0.1/", false},
		{"http://localhost.example.com/", false},
		{"https://user:secret@example.com/", false},
		{"https://user@example.com/", false},
		{"javascript:alert(1)", false},
		{"JAVASCRIPT:alert(1)", false},
		{"data:text/html,<script>alert(1)</script>", false},
		{"file:///etc/passwd", false},
		{"ftp://example.com/", false},
		{"//example.com/", false},
		{"/relative", false},
		{"https:///nohost", false},
		{"https:example.com", false},
		{"https://exa mple.com/", false},
		{"https://example.com/\n", false},
		{"https://example.com\\@evil.com/", false},
		{"", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := elicit.CheckURL(tc.url)
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func TestURLRequestRoundTrip(t *testing.T) {
	req, err := elicit.NewURLRequest("Sign in to continue", "https://example.com/login", "srv-7")
	require.NoError(t, err)
	assert.True(t, req.IsURL())
	assert.False(t, req.IsConfirm())
	data := mustMarshal(t, req)
	assert.JSONEq(t, `{"mode":"url","message":"Sign in to continue","url":"https://example.com/login","elicitationId":"srv-7",
		"_meta":{"drupal.org/ai.elicitation_id":"`+req.ID+`"}}`, string(data))

	got, err := elicit.DecodeStored(data)
	require.NoError(t, err)
	assert.Equal(t, req.ID, got.ID)
	assert.Equal(t, "https://example.com/login", got.URL)
	assert.Equal(t, "srv-7", got.ElicitationID)
	assert.Equal(t, string(data), string(mustMarshal(t, got)), "stored and read back unchanged")

	// A processor's own request in URL mode stays refused.
	_, err = elicit.DecodeRequest(data)
	assert.Equal(t, "mode", mustFieldErrors(t, err)[0].Field)
	_, err = elicit.ParseParams(data)
	assert.Equal(t, "mode", mustFieldErrors(t, err)[0].Field)

	// A form still decodes as stored.
	form := mustNewRequest(t, `{"type":"object","properties":{"ok":{"type":"boolean"}}}`)
	back, err := elicit.DecodeStored(mustMarshal(t, form))
	require.NoError(t, err)
	assert.False(t, back.IsURL())
	assert.Equal(t, form.ID, back.ID)
}

func TestURLRequestRefused(t *testing.T) {
	_, err := elicit.NewURLRequest("", "javascript:alert(1)", strings.Repeat("x", 5000))
	fields := []string{}
	for _, fe := range mustFieldErrors(t, err) {
		fields = append(fields, fe.Field)
	}
	assert.Equal(t, []string{"message", "url", "elicitationId"}, fields, "every violation at once")

	id := `"_meta":{"drupal.org/ai.elicitation_id":"` + validID + `"}`
	for _, tc := range []struct {
		name, data string
		field      string
	}{
		{"credentials", `{"mode":"url","message":"m","url":"https://a:b@example.com/",` + id + `}`, "url"},
		{"no url", `{"mode":"url","message":"m",` + id + `}`, "url"},
		{"url not a string", `{"mode":"url","message":"m","url":7,` + id + `}`, "url"},
		{"a schema", `{"mode":"url","message":"m","url":"https://example.com/","requestedSchema":{},` + id + `}`, "requestedSchema"},
		{"no ID", `{"mode":"url","message":"m","url":"https://example.com/"}`, "_meta"},
		{"widgets", `{"mode":"url","message":"m","url":"https://example.com/","_meta":{"drupal.org/ai.elicitation_id":"` + validID +
			`","drupal.org/ai.widgets":{}}}`, `_meta["drupal.org/ai.widgets"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := elicit.DecodeStored([]byte(tc.data))
			assert.Equal(t, tc.field, mustFieldErrors(t, err)[0].Field)
		})
	}
}

func TestURLResult(t *testing.T) {
	req, err := elicit.NewURLRequest("Sign in", "https://example.com/login", "")
	require.NoError(t, err)
	for _, a := range []elicit.Action{elicit.Accept, elicit.Decline, elicit.Cancel} {
		assert.NoError(t, req.Validate(elicit.Result{Action: a}))
		assert.NoError(t, req.Validate(elicit.Result{Action: a, Content: map[string]any{}}))
	}
	assert.Equal(t, []blocks.FieldError{{Field: "content", Detail: "must be absent or empty: a URL-mode question has no fields"}},
		mustFieldErrors(t, req.Validate(elicit.Result{Action: elicit.Accept, Content: map[string]any{"x": "y"}})))
	assert.Equal(t, "action", mustFieldErrors(t, req.Validate(elicit.Result{Action: "done"}))[0].Field)
	assert.Equal(t, "Accepted.", req.Describe(elicit.Result{Action: elicit.Accept}))
}

// FuzzDecodeStored: no panic; a refusal is a *blocks.ValidationError; an
// accepted request encodes to what decodes to the same encoding.
func FuzzDecodeStored(f *testing.F) {
	f.Add([]byte(`{"mode":"url","message":"m","url":"https://example.com/","elicitationId":"e","_meta":{"drupal.org/ai.elicitation_id":"` + validID + `"}}`))
	f.Add([]byte(`{"mode":"url","message":"m","url":"javascript:x","_meta":{}}`))
	f.Add([]byte(`{"message":"m","requestedSchema":{"type":"object","properties":{}},"_meta":{"drupal.org/ai.elicitation_id":"` + validID + `"}}`))
	f.Add([]byte(`{"mode":"url"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := elicit.DecodeStored(data)
		if err != nil {
			mustBeNilOrViolations(t, err)
			return
		}
		once, err := json.Marshal(req)
		require.NoError(t, err)
		again, err := elicit.DecodeStored(once)
		require.NoError(t, err, "%s", once)
		twice, err := json.Marshal(again)
		require.NoError(t, err)
		require.Equal(t, string(once), string(twice))
	})
}
