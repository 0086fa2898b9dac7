package elicit_test

import (
	"encoding/json"
	"sort"
	"testing"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequestJSONRoundTrip(t *testing.T) {
	meta := map[string]any{
		blocks.MetaWidgets:      map[string]any{},
		"example.com/app.trace": map[string]any{"n": 1.5, "big": json.Number("12345678901234567890"), "s": "<&>"},
	}
	for _, tc := range acceptedSchemas {
		t.Run(tc.name, func(t *testing.T) {
			req, err := elicit.NewRequest("Please <answer> & go", json.RawMessage(tc.schema), meta)
			require.NoError(t, err)
			first := mustMarshal(t, req)

			decoded, err := elicit.DecodeRequest(first)
			require.NoError(t, err)
			assert.Equal(t, req.ID, decoded.ID)
			assert.Equal(t, req.Message, decoded.Message)
			assert.JSONEq(t, tc.schema, string(decoded.RequestedSchema))
			assert.Equal(t, string(first), string(mustMarshal(t, decoded)))
			assert.Equal(t, req.IsConfirm(), decoded.IsConfirm())

			var wire map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(first, &wire))
			assert.Equal(t, []string{"_meta", "message", "requestedSchema"}, sortedKeys(wire), "exactly the elicitation/create params, no mode")
			var gotMeta map[string]any
			require.NoError(t, json.Unmarshal(wire["_meta"], &gotMeta))
			assert.Equal(t, req.ID, gotMeta[blocks.MetaElicitationID])
		})
	}
}

// modernKeys are keywords and fields that only 2025-11-25 defines.
var modernKeys = []string{"mode", "$schema", "oneOf", "anyOf", "items", "minItems", "maxItems", "const", "elicitationId", "url"}

func TestRequestsOf20250618HaveNo20251125Keys(t *testing.T) {
	for _, tc := range acceptedSchemas {
		if tc.modern {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			encoded := mustMarshal(t, mustNewRequest(t, tc.schema))
			var v any
			require.NoError(t, json.Unmarshal(encoded, &v))
			keys := map[string]bool{}
			collectKeys(v, keys)
			for _, k := range modernKeys {
				assert.False(t, keys[k], "2025-11-25 key %q in %s", k, encoded)
			}
		})
	}
}

func collectKeys(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			into[k] = true
			collectKeys(e, into)
		}
	case []any:
		for _, e := range x {
			collectKeys(e, into)
		}
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestRequestInsideJSONDocument(t *testing.T) {
	req := mustNewRequest(t, richSchema)
	type envelope struct {
		Elicitation *elicit.Request `json:"elicitation"`
	}
	data := mustMarshal(t, envelope{Elicitation: req})
	var got envelope
	require.NoError(t, json.Unmarshal(data, &got))
	require.NotNil(t, got.Elicitation)
	assert.Equal(t, req.ID, got.Elicitation.ID)
	assert.Error(t, got.Elicitation.Validate(elicit.Result{Action: elicit.Accept}), "the decoded request validates results")

	err := json.Unmarshal([]byte(`{"elicitation":{"mode":"url","message":"m","url":"https://x","elicitationId":"1"}}`), &got)
	assert.Error(t, err)
}

const validID = "0f8fad5b-d9cb-469f-a165-70867728950e"

func TestDecodeRequest(t *testing.T) {
	const schema = `{"type":"object","properties":{"ok":{"type":"boolean"}}}`
	meta := `{"drupal.org/ai.elicitation_id":"` + validID + `"}`
	tests := []struct {
		name string
		data string
		want []blocks.FieldError
	}{
		{name: "without mode", data: `{"message":"m","requestedSchema":` + schema + `,"_meta":` + meta + `}`},
		{name: "form mode", data: `{"mode":"form","message":"m","requestedSchema":` + schema + `,"_meta":` + meta + `}`},
		{name: "url mode", data: `{"mode":"url","message":"Please provide your API key","elicitationId":"550e8400-e29b-41d4-a716-446655440000","url":"https://mcp.example.com/ui/set_api_key"}`,
			want: []blocks.FieldError{fe("mode", "url mode is not supported: chatd supports form mode only")}},
		{name: "other mode", data: `{"mode":"voice","message":"m","requestedSchema":` + schema + `,"_meta":` + meta + `}`,
			want: []blocks.FieldError{fe("mode", `unsupported mode "voice": chatd supports form mode only`)}},
		{name: "mode not a string", data: `{"mode":1,"message":"m","requestedSchema":` + schema + `,"_meta":` + meta + `}`,
			want: []blocks.FieldError{fe("mode", "must be a string, got number")}},
		{name: "without _meta", data: `{"message":"m","requestedSchema":` + schema + `}`,
			want: []blocks.FieldError{fe("_meta", `is required: it carries "drupal.org/ai.elicitation_id"`)}},
		{name: "without ID", data: `{"message":"m","requestedSchema":` + schema + `,"_meta":{}}`,
			want: []blocks.FieldError{fe(`_meta["drupal.org/ai.elicitation_id"]`, "is required")}},
		{name: "ID not a UUID", data: `{"message":"m","requestedSchema":` + schema + `,"_meta":{"drupal.org/ai.elicitation_id":"42"}}`,
			want: []blocks.FieldError{fe(`_meta["drupal.org/ai.elicitation_id"]`, "must be a UUID in canonical lowercase form")}},
		{name: "ID in braces", data: `{"message":"m","requestedSchema":` + schema + `,"_meta":{"drupal.org/ai.elicitation_id":"{` + validID + `}"}}`,
			want: []blocks.FieldError{fe(`_meta["drupal.org/ai.elicitation_id"]`, "must be a UUID in canonical lowercase form")}},
		{name: "ID a number", data: `{"message":"m","requestedSchema":` + schema + `,"_meta":{"drupal.org/ai.elicitation_id":7}}`,
			want: []blocks.FieldError{fe(`_meta["drupal.org/ai.elicitation_id"]`, "must be a UUID in canonical lowercase form")}},
		{name: "_meta not an object", data: `{"message":"m","requestedSchema":` + schema + `,"_meta":[]}`,
			want: []blocks.FieldError{fe("_meta", "must be a JSON object, got array")}},
		{name: "without message", data: `{"requestedSchema":` + schema + `,"_meta":` + meta + `}`,
			want: []blocks.FieldError{fe("message", "is required")}},
		{name: "message not a string", data: `{"message":["m"],"requestedSchema":` + schema + `,"_meta":` + meta + `}`,
			want: []blocks.FieldError{fe("message", "must be a string, got array")}},
		{name: "without schema", data: `{"message":"m","_meta":` + meta + `}`,
			want: []blocks.FieldError{fe("requestedSchema", "is required")}},
		{name: "null schema", data: `{"message":"m","requestedSchema":null,"_meta":` + meta + `}`,
			want: []blocks.FieldError{fe("requestedSchema", "must be a JSON object, got null")}},
		{name: "invalid schema", data: `{"message":"m","requestedSchema":{"type":"object","properties":{"p":{"type":"string","pattern":"."}}},"_meta":` + meta + `}`,
			want: []blocks.FieldError{fe("requestedSchema.properties.p.pattern", "pattern is not supported: frontends do not share one regular expression dialect")}},
		{name: "widget for an undeclared property", data: `{"message":"m","requestedSchema":` + schema + `,"_meta":{"drupal.org/ai.elicitation_id":"` + validID + `","drupal.org/ai.widgets":{"no":{"widget":"x"}}}}`,
			want: []blocks.FieldError{fe(`_meta["drupal.org/ai.widgets"].no`, `"no" is not a declared property`)}},
		{name: "unknown field", data: `{"message":"m","requestedSchema":` + schema + `,"_meta":` + meta + `,"task":{"ttl":1}}`,
			want: []blocks.FieldError{fe("task", "unknown field of an elicitation request")}},
		{name: "repeated field", data: `{"message":"m","message":"n","requestedSchema":` + schema + `,"_meta":` + meta + `}`,
			want: []blocks.FieldError{fe("message", "appears more than once")}},
		{name: "not an object", data: `["m"]`,
			want: []blocks.FieldError{fe("", "an elicitation request must be a JSON object, got array")}},
		{name: "not JSON", data: `{"message":`,
			want: []blocks.FieldError{fe("", "an elicitation request must be valid JSON")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := elicit.DecodeRequest([]byte(tc.data))
			if tc.want != nil {
				assert.Nil(t, req)
				assert.Equal(t, tc.want, mustFieldErrors(t, err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, validID, req.ID)
			assert.Equal(t, "m", req.Message)
			assert.JSONEq(t, schema, string(req.RequestedSchema))
			assert.NotContains(t, string(mustMarshal(t, req)), "mode", "decoding form mode does not make chatd emit it")
		})
	}
}

func TestDecodeRequestUnderLimits(t *testing.T) {
	req, err := elicit.Limits{MaxProperties: 65}.NewRequest("m", json.RawMessage(tooManyProperties(65)), nil)
	require.NoError(t, err)
	data := mustMarshal(t, req)

	_, err = elicit.DecodeRequest(data)
	assert.Equal(t, []blocks.FieldError{fe("requestedSchema.properties", "65 properties exceed the limit of 64")}, mustFieldErrors(t, err))
	decoded, err := elicit.Limits{MaxProperties: 65}.DecodeRequest(data)
	require.NoError(t, err)
	assert.Equal(t, req.ID, decoded.ID)
}

func TestMarshalKeepsIDInMeta(t *testing.T) {
	req := &elicit.Request{ID: validID, Message: "m", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}
	data := mustMarshal(t, req)
	assert.JSONEq(t, `{"message":"m","requestedSchema":{"type":"object","properties":{}},"_meta":{"drupal.org/ai.elicitation_id":"`+validID+`"}}`, string(data))
	decoded, err := elicit.DecodeRequest(data)
	require.NoError(t, err)
	assert.Equal(t, validID, decoded.ID)
}
