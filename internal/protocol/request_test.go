package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/protocol"
)

func TestDecode(t *testing.T) {
	type body struct {
		ID *string `json:"id"`
		N  any     `json:"n"`
	}
	tests := []struct {
		name    string
		data    string
		want    body
		wantErr string
	}{
		{name: "unknown members ignored, numbers kept as written", data: `{"id":"t","n":1.50,"app":{}}`,
			want: body{ID: ptr("t"), N: json.Number("1.50")}},
		{name: "a member of the wrong type", data: `{"id":7}`, wantErr: "id: must not be number"},
		{name: "not JSON", data: `{"id":`, wantErr: "unexpected EOF"},
		{name: "two values", data: `{} {}`, wantErr: "unexpected data after the JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got body
			err := protocol.Decode([]byte(tt.data), &got)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDecodeAnswer(t *testing.T) {
	got, err := protocol.DecodeAnswer("e1", json.RawMessage(`{"action":"accept","content":{"n":2},"_meta":{"example.com/x":true}}`), "output")
	require.NoError(t, err)
	assert.Equal(t, &protocol.Answer{
		ElicitationID: "e1",
		Result:        elicit.Result{Action: elicit.Accept, Content: map[string]any{"n": json.Number("2")}},
		Meta:          map[string]any{"example.com/x": true},
	}, got)

	for _, raw := range []string{`{"action":"accept","approved":true}`, `"yes"`, ``} {
		_, err := protocol.DecodeAnswer("e1", json.RawMessage(raw), "resume[0].payload")
		var ierr *protocol.InputError
		require.ErrorAs(t, err, &ierr, "answer %q", raw)
		assert.Contains(t, ierr.Detail, "resume[0].payload: must be an elicitation result {action, content?}: ")
	}
}

func TestLastMessage(t *testing.T) {
	var msg struct {
		Role string `json:"role"`
	}
	path, err := protocol.LastMessage([]json.RawMessage{json.RawMessage(`7`), json.RawMessage(`{"role":"user"}`)}, &msg)
	require.NoError(t, err)
	assert.Equal(t, "messages[1]", path)
	assert.Equal(t, "user", msg.Role)

	_, err = protocol.LastMessage([]json.RawMessage{json.RawMessage(`{"role":7}`)}, &msg)
	var ierr *protocol.InputError
	require.ErrorAs(t, err, &ierr)
	assert.Equal(t, "messages[0]: role: must not be number", ierr.Detail)

	_, err = protocol.LastMessage([]json.RawMessage{json.RawMessage(`{"role":"user","role":"assistant"}`)}, &msg)
	var verr *blocks.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Errors, 1)
	assert.Equal(t, "messages[0].role", verr.Errors[0].Field)
}

func TestThreadIDAndRequireContent(t *testing.T) {
	id, err := protocol.ThreadID(ptr("t1"), "threadId")
	require.NoError(t, err)
	assert.Equal(t, "t1", id)
	for _, missing := range []*string{nil, ptr("")} {
		_, err := protocol.ThreadID(missing, "threadId")
		assert.EqualError(t, err, "threadId: required (the chatd thread ID)")
	}

	assert.NoError(t, protocol.RequireContent("hi", nil, "messages[0].parts"))
	assert.NoError(t, protocol.RequireContent("", []blocks.ContentBlock{blocks.Text("x")}, "messages[0].parts"))
	assert.EqualError(t, protocol.RequireContent("", nil, "messages[0].parts"), "messages[0].parts: the message has no text and no attachments")
}

func ptr(s string) *string { return &s }
