package elicit_test

import (
	"encoding/json"
	"math"
	"testing"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// richSchema has one property of every kind, with constraints on each.
const richSchema = `{"type":"object","properties":{
	"name":{"type":"string","minLength":2,"maxLength":5},
	"email":{"type":"string","format":"email"},
	"site":{"type":"string","format":"uri"},
	"birthday":{"type":"string","format":"date"},
	"meeting":{"type":"string","format":"date-time"},
	"age":{"type":"integer","minimum":18,"maximum":130},
	"score":{"type":"number","minimum":-1.5,"maximum":2.5},
	"agree":{"type":"boolean"},
	"color":{"type":"string","enum":["red","green","blue"],"enumNames":["Red","Green","Blue"]},
	"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"m","title":"Medium"}]},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b","c","d"]},"minItems":1,"maxItems":3},
	"langs":{"type":"array","items":{"anyOf":[{"const":"go","title":"Go"},{"const":"php","title":"PHP"}]}}},
	"required":["name","email"]}`

func fe(field, detail string) blocks.FieldError {
	return blocks.FieldError{Field: field, Detail: detail}
}

func TestValidateResult(t *testing.T) {
	const colors = `must be one of "red", "green", "blue"`
	tests := []struct {
		name    string
		action  elicit.Action
		content string // JSON, decoded with UseNumber; "" for none
		want    []blocks.FieldError
	}{
		{name: "required only", action: elicit.Accept, content: `{"name":"Ann","email":"ann@example.com"}`},
		{name: "every property", action: elicit.Accept, content: `{"name":"Ann","email":"ann@example.com",
			"site":"https://example.com/a?b=c#d","birthday":"2024-02-29","meeting":"2025-06-18T10:00:00+02:00",
			"age":30,"score":0.5,"agree":true,"color":"green","size":"m","tags":["a","d"],"langs":["php","go"]}`},
		{name: "two-byte characters at maxLength", action: elicit.Accept, content: `{"name":"héllo","email":"a@b.c"}`},
		{name: "two-byte characters past maxLength", action: elicit.Accept, content: `{"name":"héllos","email":"a@b.c"}`,
			want: []blocks.FieldError{fe("name", "must be at most 5 characters long, got 6")}},
		{name: "emoji at maxLength", action: elicit.Accept, content: `{"name":"😀😀😀😀😀","email":"a@b.c"}`},
		{name: "emoji past maxLength", action: elicit.Accept, content: `{"name":"😀😀😀😀😀😀","email":"a@b.c"}`,
			want: []blocks.FieldError{fe("name", "must be at most 5 characters long, got 6")}},
		{name: "one two-byte character under minLength", action: elicit.Accept, content: `{"name":"é","email":"a@b.c"}`,
			want: []blocks.FieldError{fe("name", "must be at least 2 characters long, got 1")}},
		{name: "empty string under minLength", action: elicit.Accept, content: `{"name":"","email":"a@b.c"}`,
			want: []blocks.FieldError{fe("name", "must be at least 2 characters long, got 0")}},
		{name: "number for a string", action: elicit.Accept, content: `{"name":42,"email":"a@b.c"}`,
			want: []blocks.FieldError{fe("name", "must be a string, got number")}},
		{name: "null for a required string", action: elicit.Accept, content: `{"name":null,"email":"a@b.c"}`,
			want: []blocks.FieldError{fe("name", "must be a string, got null")}},
		{name: "not an email", action: elicit.Accept, content: `{"name":"Ann","email":"ann.example.com"}`,
			want: []blocks.FieldError{fe("email", "must be an email address")}},
		{name: "email with display name", action: elicit.Accept, content: `{"name":"Ann","email":"Ann <ann@example.com>"}`,
			want: []blocks.FieldError{fe("email", "must be an email address")}},
		{name: "email with surrounding space", action: elicit.Accept, content: `{"name":"Ann","email":" ann@example.com"}`,
			want: []blocks.FieldError{fe("email", "must be an email address")}},
		{name: "non-http URI", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","site":"urn:isbn:0451450523"}`},
		{name: "URI without scheme", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","site":"example.com/page"}`,
			want: []blocks.FieldError{fe("site", "must be an absolute URI with a scheme")}},
		{name: "URI with a space", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","site":"https://example.com/a b"}`,
			want: []blocks.FieldError{fe("site", "must be an absolute URI with a scheme")}},
		{name: "leap day", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","birthday":"2024-02-29"}`},
		{name: "February 30", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","birthday":"2025-02-30"}`,
			want: []blocks.FieldError{fe("birthday", "must be a calendar date formatted YYYY-MM-DD")}},
		{name: "date without zero padding", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","birthday":"2025-2-3"}`,
			want: []blocks.FieldError{fe("birthday", "must be a calendar date formatted YYYY-MM-DD")}},
		{name: "date-time in UTC with fraction", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","meeting":"2025-06-18T10:00:00.250Z"}`},
		{name: "date-time without offset", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","meeting":"2025-06-18T10:00:00"}`,
			want: []blocks.FieldError{fe("meeting", "must be an RFC 3339 date-time with a time zone offset")}},
		{name: "date for a date-time", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","meeting":"2025-06-18"}`,
			want: []blocks.FieldError{fe("meeting", "must be an RFC 3339 date-time with a time zone offset")}},
		{name: "integer written 30.0", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":30.0}`},
		{name: "integer written 1e2", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":1e2}`},
		{name: "integer written 1.25e2", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":1.25e2}`},
		{name: "fraction for an integer", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":30.5}`,
			want: []blocks.FieldError{fe("age", "must be an integer")}},
		{name: "fraction beyond double precision", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":30.0000000000000000001}`,
			want: []blocks.FieldError{fe("age", "must be an integer")}},
		{name: "integer at minimum", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":18}`},
		{name: "integer below minimum", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":17}`,
			want: []blocks.FieldError{fe("age", "must be at least 18")}},
		{name: "integer above maximum", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":131}`,
			want: []blocks.FieldError{fe("age", "must be at most 130")}},
		{name: "fraction below minimum", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":17.5}`,
			want: []blocks.FieldError{fe("age", "must be an integer"), fe("age", "must be at least 18")}},
		{name: "string for an integer", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","age":"30"}`,
			want: []blocks.FieldError{fe("age", "must be an integer, got string")}},
		{name: "number at fractional minimum", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","score":-1.5}`},
		{name: "number above fractional maximum", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","score":2.51}`,
			want: []blocks.FieldError{fe("score", "must be at most 2.5")}},
		{name: "number beyond a double", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","score":1e400}`,
			want: []blocks.FieldError{fe("score", "must be a finite number within the range of a double")}},
		{name: "boolean for a number", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","score":true}`,
			want: []blocks.FieldError{fe("score", "must be a number, got boolean")}},
		{name: "false", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","agree":false}`},
		{name: "string for a boolean", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","agree":"true"}`,
			want: []blocks.FieldError{fe("agree", "must be a boolean, got string")}},
		{name: "enum display name instead of value", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","color":"Green"}`,
			want: []blocks.FieldError{fe("color", colors)}},
		{name: "array for a single-select", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","color":["red"]}`,
			want: []blocks.FieldError{fe("color", "must be a string, got array")}},
		{name: "oneOf title instead of const", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","size":"Medium"}`,
			want: []blocks.FieldError{fe("size", `must be one of "s", "m"`)}},
		{name: "empty selection under minItems", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","tags":[]}`,
			want: []blocks.FieldError{fe("tags", "must have at least 1 item, got 0")}},
		{name: "selection over maxItems", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","tags":["a","b","c","d"]}`,
			want: []blocks.FieldError{fe("tags", "must have at most 3 items, got 4")}},
		{name: "repeated selection", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","tags":["a","b","a"]}`,
			want: []blocks.FieldError{fe("tags", "item 2 repeats item 0: selections must be unique")}},
		{name: "selection outside options", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","tags":["a","x"]}`,
			want: []blocks.FieldError{fe("tags", `item 1 must be one of "a", "b", "c", "d"`)}},
		{name: "selection with a number", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","tags":["a",1]}`,
			want: []blocks.FieldError{fe("tags", "item 1 must be a string, got number")}},
		{name: "string for a multi-select", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","tags":"a"}`,
			want: []blocks.FieldError{fe("tags", "must be an array of strings, got string")}},
		{name: "selection longer than the options", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","langs":["go","go","go"]}`,
			want: []blocks.FieldError{fe("langs", "has 3 items but there are only 2 options")}},
		{name: "empty selection without minItems", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","langs":[]}`},
		{name: "anyOf title instead of const", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","langs":["Go"]}`,
			want: []blocks.FieldError{fe("langs", `item 0 must be one of "go", "php"`)}},
		{name: "undeclared keys", action: elicit.Accept, content: `{"name":"Ann","email":"a@b.c","zeta":1,"nickname":"A"}`,
			want: []blocks.FieldError{fe("nickname", "is not a declared property"), fe("zeta", "is not a declared property")}},
		{name: "missing required", action: elicit.Accept, content: `{"agree":true}`,
			want: []blocks.FieldError{fe("name", "is required"), fe("email", "is required")}},
		{name: "accept without content", action: elicit.Accept,
			want: []blocks.FieldError{fe("name", "is required"), fe("email", "is required")}},
		{name: "decline", action: elicit.Decline},
		{name: "decline with empty content", action: elicit.Decline, content: `{}`},
		{name: "decline with content", action: elicit.Decline, content: `{"name":"Ann"}`,
			want: []blocks.FieldError{fe("content", `must be absent or empty when action is "decline"`)}},
		{name: "cancel", action: elicit.Cancel},
		{name: "cancel with empty content", action: elicit.Cancel, content: `{}`},
		{name: "cancel with content", action: elicit.Cancel, content: `{"agree":false}`,
			want: []blocks.FieldError{fe("content", `must be absent or empty when action is "cancel"`)}},
		{name: "unknown action", action: "submit", content: `{"name":"Ann","email":"a@b.c"}`,
			want: []blocks.FieldError{fe("action", `must be one of "accept", "decline" or "cancel"`)}},
		{name: "empty action", action: "",
			want: []blocks.FieldError{fe("action", `must be one of "accept", "decline" or "cancel"`)}},
	}
	req := mustNewRequest(t, richSchema)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := req.Validate(elicit.Result{Action: tc.action, Content: mustDecodeContent(t, tc.content)})
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tc.want, mustFieldErrors(t, err))
		})
	}
}

func TestValidateReportsAllViolationsTogether(t *testing.T) {
	req := mustNewRequest(t, richSchema)
	content := mustDecodeContent(t, `{"name":"x","site":"nope","birthday":"2025-13-01","meeting":"noon",
		"age":"old","score":99,"agree":1,"color":"pink","size":"xl","tags":["a","a","q"],"langs":"go","extra":true}`)
	err := req.Validate(elicit.Result{Action: elicit.Accept, Content: content})
	want := []blocks.FieldError{
		fe("name", "must be at least 2 characters long, got 1"),
		fe("email", "is required"),
		fe("site", "must be an absolute URI with a scheme"),
		fe("birthday", "must be a calendar date formatted YYYY-MM-DD"),
		fe("meeting", "must be an RFC 3339 date-time with a time zone offset"),
		fe("age", "must be an integer, got string"),
		fe("score", "must be at most 2.5"),
		fe("agree", "must be a boolean, got number"),
		fe("color", `must be one of "red", "green", "blue"`),
		fe("size", `must be one of "s", "m"`),
		fe("tags", "item 1 repeats item 0: selections must be unique"),
		fe("tags", `item 2 must be one of "a", "b", "c", "d"`),
		fe("langs", "must be an array of strings, got string"),
		fe("extra", "is not a declared property"),
	}
	assert.Equal(t, want, mustFieldErrors(t, err))
}

func TestValidateAcceptsGoValues(t *testing.T) {
	req := mustNewRequest(t, richSchema)
	tests := []struct {
		name  string
		field string
		value any
		want  []blocks.FieldError
	}{
		{name: "float64 integer", field: "age", value: float64(30)},
		{name: "int", field: "age", value: 30},
		{name: "int64 below minimum", field: "age", value: int64(3), want: []blocks.FieldError{fe("age", "must be at least 18")}},
		{name: "uint8", field: "age", value: uint8(40)},
		{name: "float64 fraction for integer", field: "age", value: 30.5, want: []blocks.FieldError{fe("age", "must be an integer")}},
		{name: "float32", field: "score", value: float32(1.25)},
		{name: "NaN", field: "score", value: math.NaN(),
			want: []blocks.FieldError{fe("score", "must be a finite number within the range of a double")}},
		{name: "infinity", field: "score", value: math.Inf(1),
			want: []blocks.FieldError{fe("score", "must be a finite number within the range of a double")}},
		{name: "malformed json.Number", field: "score", value: json.Number("Inf"),
			want: []blocks.FieldError{fe("score", "must be a finite number within the range of a double")}},
		{name: "hexadecimal json.Number", field: "score", value: json.Number("0x1p1"),
			want: []blocks.FieldError{fe("score", "must be a finite number within the range of a double")}},
		{name: "string slice", field: "tags", value: []string{"b", "c"}},
		{name: "string slice with repeat", field: "tags", value: []string{"b", "b"},
			want: []blocks.FieldError{fe("tags", "item 1 repeats item 0: selections must be unique")}},
		{name: "int slice", field: "tags", value: []int{1}, want: []blocks.FieldError{fe("tags", "must be an array of strings, got unsupported value")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content := map[string]any{"name": "Ann", "email": "a@b.c", tc.field: tc.value}
			err := req.Validate(elicit.Result{Action: elicit.Accept, Content: content})
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tc.want, mustFieldErrors(t, err))
		})
	}
}

func TestValidateLongOptionLists(t *testing.T) {
	req := mustNewRequest(t, tooManyOptions(256))
	assert.NoError(t, req.Validate(elicit.Result{Action: elicit.Accept, Content: map[string]any{"e": "o255"}}))
	err := req.Validate(elicit.Result{Action: elicit.Accept, Content: map[string]any{"e": "o256"}})
	assert.Equal(t, []blocks.FieldError{fe("e", "must be one of the 256 allowed options")}, mustFieldErrors(t, err))
}

func TestValidateStructLiteralRequest(t *testing.T) {
	valid := &elicit.Request{ID: "x", Message: "m", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)}
	assert.NoError(t, valid.Validate(elicit.Result{Action: elicit.Accept, Content: map[string]any{"ok": true}}))
	assert.True(t, valid.IsConfirm())

	broken := &elicit.Request{ID: "x", Message: "m", RequestedSchema: json.RawMessage(`{"type":"object"}`)}
	err := broken.Validate(elicit.Result{Action: elicit.Cancel})
	require.Error(t, err)
	var ve *blocks.ValidationError
	assert.NotErrorAs(t, err, &ve, "a broken request is the server's fault, not a client validation error")
	assert.False(t, broken.IsConfirm())
}
