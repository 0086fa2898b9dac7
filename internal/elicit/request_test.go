package elicit_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acceptedSchemas are the example schemas of the MCP 2025-06-18 and
// 2025-11-25 elicitation pages, plus every primitive with every optional
// keyword. modern marks those using 2025-11-25 features.
var acceptedSchemas = []struct {
	name   string
	schema string
	modern bool
}{
	{name: "2025-06-18 GitHub username", schema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`},
	{name: "2025-06-18 contact information", schema: `{"type":"object","properties":{
		"name":{"type":"string","description":"Your full name"},
		"email":{"type":"string","format":"email","description":"Your email address"},
		"age":{"type":"number","minimum":18,"description":"Your age"}},
		"required":["name","email"]}`},
	{name: "2025-06-18 request schema section", schema: `{"type":"object","properties":{
		"propertyName":{"type":"string","title":"Display Name","description":"Description of the property"},
		"anotherProperty":{"type":"number","minimum":0,"maximum":100}},
		"required":["propertyName"]}`},
	{name: "2025-06-18 string schema", schema: `{"type":"object","properties":{"s":{"type":"string","title":"Display Name",
		"description":"Description text","minLength":3,"maxLength":50,"format":"email"}}}`},
	{name: "2025-06-18 number schema", schema: `{"type":"object","properties":{"n":{"type":"number","title":"Display Name",
		"description":"Description text","minimum":0,"maximum":100}}}`},
	{name: "2025-06-18 integer schema", schema: `{"type":"object","properties":{"n":{"type":"integer","title":"Display Name",
		"description":"Description text","minimum":0,"maximum":100}}}`},
	{name: "2025-06-18 boolean schema", schema: `{"type":"object","properties":{"b":{"type":"boolean","title":"Display Name",
		"description":"Description text","default":false}}}`},
	{name: "2025-06-18 enum schema with enumNames", schema: `{"type":"object","properties":{"e":{"type":"string","title":"Display Name",
		"description":"Description text","enum":["option1","option2","option3"],"enumNames":["Option 1","Option 2","Option 3"]}}}`},
	{name: "2025-06-18 every format", schema: `{"type":"object","properties":{
		"email":{"type":"string","format":"email"},"uri":{"type":"string","format":"uri"},
		"date":{"type":"string","format":"date"},"dt":{"type":"string","format":"date-time"}}}`},
	{name: "2025-06-18 fractional and negative bounds", schema: `{"type":"object","properties":{
		"t":{"type":"number","minimum":-273.15,"maximum":1e3},"i":{"type":"integer","minimum":-5,"maximum":-5}}}`},
	{name: "2025-06-18 equal string bounds", schema: `{"type":"object","properties":{"pin":{"type":"string","minLength":4,"maxLength":4}}}`},
	{name: "2025-06-18 empty confirm", schema: `{"type":"object","properties":{}}`},
	{name: "2025-11-25 GitHub username", schema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`},
	// The 2025-11-25 string example also shows "pattern", which schema.ts's
	// StringSchema does not define and chatd refuses (frontends share no regular
	// expression dialect); see the reject table.
	{name: "2025-11-25 string schema", modern: true, schema: `{"type":"object","properties":{"s":{"type":"string","title":"Display Name",
		"description":"Description text","minLength":3,"maxLength":50,"format":"email","default":"user@example.com"}}}`},
	{name: "2025-11-25 number schema", modern: true, schema: `{"type":"object","properties":{"n":{"type":"number","title":"Display Name",
		"description":"Description text","minimum":0,"maximum":100,"default":50}}}`},
	{name: "2025-11-25 integer default", modern: true, schema: `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10,"default":3}}}`},
	{name: "2025-11-25 boolean schema", schema: `{"type":"object","properties":{"b":{"type":"boolean","title":"Display Name",
		"description":"Description text","default":false}}}`},
	{name: "2025-11-25 untitled single-select", modern: true, schema: `{"type":"object","properties":{"color":{"type":"string",
		"title":"Color Selection","description":"Choose your favorite color","enum":["Red","Green","Blue"],"default":"Red"}}}`},
	{name: "2025-11-25 titled single-select", modern: true, schema: `{"type":"object","properties":{"color":{"type":"string",
		"title":"Color Selection","description":"Choose your favorite color","oneOf":[
		{"const":"#FF0000","title":"Red"},{"const":"#00FF00","title":"Green"},{"const":"#0000FF","title":"Blue"}],"default":"#FF0000"}}}`},
	{name: "2025-11-25 untitled multi-select", modern: true, schema: `{"type":"object","properties":{"colors":{"type":"array",
		"title":"Color Selection","description":"Choose your favorite colors","minItems":1,"maxItems":2,
		"items":{"type":"string","enum":["Red","Green","Blue"]},"default":["Red","Green"]}}}`},
	{name: "2025-11-25 titled multi-select", modern: true, schema: `{"type":"object","properties":{"colors":{"type":"array",
		"title":"Color Selection","description":"Choose your favorite colors","minItems":1,"maxItems":2,
		"items":{"anyOf":[{"const":"#FF0000","title":"Red"},{"const":"#00FF00","title":"Green"},{"const":"#0000FF","title":"Blue"}]},
		"default":["#FF0000","#00FF00"]}}}`},
	{name: "2025-11-25 legacy titled enum with default", modern: true, schema: `{"type":"object","properties":{"e":{"type":"string",
		"enum":["a","b"],"enumNames":["A","B"],"default":"b"}}}`},
	{name: "2025-11-25 $schema at the root", modern: true, schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema",
		"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`},
	{name: "2025-11-25 defaults of every format", modern: true, schema: `{"type":"object","properties":{
		"u":{"type":"string","format":"uri","default":"https://example.com/a?b=c"},
		"d":{"type":"string","format":"date","default":"2024-02-29"},
		"t":{"type":"string","format":"date-time","default":"2025-11-25T09:30:00.5-05:00"},
		"h":{"type":"string","minLength":2,"maxLength":5,"default":"héllo"},
		"x":{"type":"integer","default":1.0},"y":{"type":"number","default":1e2},
		"m":{"type":"array","items":{"type":"string","enum":["a","b"]},"default":[]}}}`},
}

func TestNewRequestAcceptsMCPSchemas(t *testing.T) {
	for _, tc := range acceptedSchemas {
		t.Run(tc.name, func(t *testing.T) {
			req, err := elicit.NewRequest("Please answer", json.RawMessage(tc.schema), nil)
			require.NoError(t, err)
			assert.Equal(t, tc.schema, string(req.RequestedSchema), "the schema is kept exactly as given")
			_, err = uuid.Parse(req.ID)
			assert.NoError(t, err)
			assert.Equal(t, req.ID, req.Meta[blocks.MetaElicitationID])
			assert.NoError(t, req.Validate(elicit.Result{Action: elicit.Cancel}))
		})
	}
}

func TestNewRequestMintsFreshIDs(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	meta := map[string]any{blocks.MetaElicitationID: "caller-chosen", "example.com/app.trace": "x"}
	a, err := elicit.NewRequest("Proceed?", schema, meta)
	require.NoError(t, err)
	b, err := elicit.NewRequest("Proceed?", schema, meta)
	require.NoError(t, err)
	assert.NotEqual(t, a.ID, b.ID)
	assert.Equal(t, a.ID, a.Meta[blocks.MetaElicitationID], "a caller's ID is replaced")
	assert.Equal(t, "caller-chosen", meta[blocks.MetaElicitationID], "the caller's map is not modified")
	assert.Equal(t, "x", a.Meta["example.com/app.trace"])
}

// reject is one refused schema and the violation it must produce.
type reject struct {
	name   string
	schema string
	field  string
	detail string
}

var rejectedSchemas = []reject{
	{"nested object", `{"type":"object","properties":{"address":{"type":"object","properties":{"street":{"type":"string"}}}}}`,
		"requestedSchema.properties.address.type", "nested objects are not supported"},
	{"properties on a string", `{"type":"object","properties":{"a":{"type":"string","properties":{}}}}`,
		"requestedSchema.properties.a.properties", "nested objects are not supported"},
	{"array of objects", `{"type":"object","properties":{"people":{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"}}}}}}`,
		"requestedSchema.properties.people.items.type", "arrays of objects are not supported: multi-select items must be strings"},
	{"array of numbers", `{"type":"object","properties":{"ns":{"type":"array","items":{"type":"number","enum":[1,2]}}}}`,
		"requestedSchema.properties.ns.items.type", "arrays of numbers are not supported: multi-select items must be strings"},
	{"array of free strings", `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}}}`,
		"requestedSchema.properties.tags.items", "must list the options: a multi-select needs items.enum or items.anyOf"},
	{"array without items", `{"type":"object","properties":{"tags":{"type":"array"}}}`,
		"requestedSchema.properties.tags.items", "is required: a multi-select lists its options in items"},
	{"$ref property", `{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}}}`,
		"requestedSchema.properties.a.$ref", "$ref is not supported: the schema must be self-contained and flat"},
	{"$ref at the root", `{"type":"object","properties":{},"$ref":"#/x"}`,
		"requestedSchema.$ref", "$ref is not supported: the schema must be self-contained and flat"},
	{"pattern", `{"type":"object","properties":{"s":{"type":"string","pattern":"^[A-Za-z]+$"}}}`,
		"requestedSchema.properties.s.pattern", "pattern is not supported: frontends do not share one regular expression dialect"},
	{"unknown keyword", `{"type":"object","properties":{"s":{"type":"string","placeholder":"x"}}}`,
		"requestedSchema.properties.s.placeholder", `unknown keyword "placeholder"`},
	{"unknown keyword at the root", `{"type":"object","properties":{},"additionalProperties":false}`,
		"requestedSchema.additionalProperties", "additionalProperties is not supported: undeclared keys are always refused"},
	{"title at the root", `{"type":"object","title":"Form","properties":{}}`,
		"requestedSchema.title", `keyword "title" is not allowed at the root`},
	{"keyword of another type", `{"type":"object","properties":{"s":{"type":"string","minimum":1}}}`,
		"requestedSchema.properties.s.minimum", `keyword "minimum" is not allowed on a string property`},
	{"format on a number", `{"type":"object","properties":{"n":{"type":"number","format":"email"}}}`,
		"requestedSchema.properties.n.format", `keyword "format" is not allowed on a number property`},
	{"unsupported format", `{"type":"object","properties":{"email":{"type":"string","format":"phone"}}}`,
		"requestedSchema.properties.email.format", `unsupported format "phone": use "email", "uri", "date" or "date-time"`},
	{"unsupported type", `{"type":"object","properties":{"x":{"type":"null"}}}`,
		"requestedSchema.properties.x.type", `unsupported type "null"`},
	{"type list", `{"type":"object","properties":{"x":{"type":["string","null"]}}}`,
		"requestedSchema.properties.x.type", "must be a single type name, got array"},
	{"missing type", `{"type":"object","properties":{"x":{"title":"X"}}}`,
		"requestedSchema.properties.x.type", "is required"},
	{"property not an object", `{"type":"object","properties":{"x":"string"}}`,
		"requestedSchema.properties.x", "must be a JSON object, got string"},
	{"root not object type", `{"type":"array","properties":{}}`, "requestedSchema.type", `must be "object"`},
	{"root without type", `{"properties":{}}`, "requestedSchema.type", `is required and must be "object"`},
	{"root without properties", `{"type":"object"}`, "requestedSchema.properties", "is required"},
	{"root not an object", `[]`, "requestedSchema", "must be a JSON object, got array"},
	{"invalid JSON", `{"type":`, "requestedSchema", "is not valid JSON"},
	{"empty schema", ``, "requestedSchema", "is required"},
	{"$schema not a string", `{"$schema":1,"type":"object","properties":{}}`, "requestedSchema.$schema", "must be a string"},
	{"required names an undeclared property", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`,
		"requestedSchema.required[1]", `"b" is not a declared property`},
	{"required repeats a name", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]}`,
		"requestedSchema.required[1]", `"a" is listed more than once`},
	{"required not an array", `{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`,
		"requestedSchema.required", "must be an array of property names, got string"},
	{"required with a number", `{"type":"object","properties":{"a":{"type":"string"}},"required":[1]}`,
		"requestedSchema.required[0]", "must be a string, got number"},
	{"non-string enum value", `{"type":"object","properties":{"e":{"type":"string","enum":["a",2]}}}`,
		"requestedSchema.properties.e.enum[1]", "enum values must be strings, got number"},
	{"null enum value", `{"type":"object","properties":{"e":{"type":"string","enum":[null]}}}`,
		"requestedSchema.properties.e.enum[0]", "enum values must be strings, got null"},
	{"duplicate enum value", `{"type":"object","properties":{"e":{"type":"string","enum":["Red","Green","Red"]}}}`,
		"requestedSchema.properties.e.enum[2]", `duplicate value "Red"`},
	{"empty enum", `{"type":"object","properties":{"e":{"type":"string","enum":[]}}}`,
		"requestedSchema.properties.e.enum", "must not be empty: a select needs at least one option"},
	{"enum on a number", `{"type":"object","properties":{"e":{"type":"number","enum":[1,2]}}}`,
		"requestedSchema.properties.e.enum", `keyword "enum" is not allowed on a number property`},
	{"enumNames too short", `{"type":"object","properties":{"e":{"type":"string","enum":["a","b","c"],"enumNames":["A","B"]}}}`,
		"requestedSchema.properties.e.enumNames", "has 2 names for 3 enum values: they must pair up"},
	{"enumNames too long", `{"type":"object","properties":{"e":{"type":"string","enum":["a"],"enumNames":["A","B"]}}}`,
		"requestedSchema.properties.e.enumNames", "has 2 names for 1 enum value: they must pair up"},
	{"enumNames without enum", `{"type":"object","properties":{"e":{"type":"string","enumNames":["A"]}}}`,
		"requestedSchema.properties.e.enumNames", `keyword "enumNames" is not allowed on a string property`},
	{"enum and oneOf", `{"type":"object","properties":{"e":{"type":"string","enum":["a"],"oneOf":[{"const":"a","title":"A"}]}}}`,
		"requestedSchema.properties.e.oneOf", "cannot be combined with enum: a single-select uses one or the other"},
	{"oneOf option without title", `{"type":"object","properties":{"e":{"type":"string","oneOf":[{"const":"a"}]}}}`,
		"requestedSchema.properties.e.oneOf[0].title", "is required"},
	{"oneOf non-string const", `{"type":"object","properties":{"e":{"type":"string","oneOf":[{"const":1,"title":"One"}]}}}`,
		"requestedSchema.properties.e.oneOf[0].const", "option values must be strings, got number"},
	{"oneOf duplicate const", `{"type":"object","properties":{"e":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"a","title":"B"}]}}}`,
		"requestedSchema.properties.e.oneOf[1].const", `duplicate value "a"`},
	{"oneOf option with extra keyword", `{"type":"object","properties":{"e":{"type":"string","oneOf":[{"const":"a","title":"A","description":"x"}]}}}`,
		"requestedSchema.properties.e.oneOf[0].description", `unknown keyword "description"`},
	{"anyOf duplicate const", `{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"a","title":"A"}]}}}}`,
		"requestedSchema.properties.m.items.anyOf[1].const", `duplicate value "a"`},
	{"items enum without type", `{"type":"object","properties":{"m":{"type":"array","items":{"enum":["a"]}}}}`,
		"requestedSchema.properties.m.items.type", `is required with enum and must be "string"`},
	{"items with non-string enum", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":[true]}}}}`,
		"requestedSchema.properties.m.items.enum[0]", "enum values must be strings, got boolean"},
	{"minLength above maxLength", `{"type":"object","properties":{"s":{"type":"string","minLength":5,"maxLength":3}}}`,
		"requestedSchema.properties.s.minLength", "must not exceed maxLength (5 > 3)"},
	{"negative minLength", `{"type":"object","properties":{"s":{"type":"string","minLength":-1}}}`,
		"requestedSchema.properties.s.minLength", "must be a non-negative integer"},
	{"fractional maxLength", `{"type":"object","properties":{"s":{"type":"string","maxLength":2.5}}}`,
		"requestedSchema.properties.s.maxLength", "must be a non-negative integer"},
	{"string maxLength", `{"type":"object","properties":{"s":{"type":"string","maxLength":"5"}}}`,
		"requestedSchema.properties.s.maxLength", "must be a non-negative integer"},
	{"minimum above maximum", `{"type":"object","properties":{"n":{"type":"number","minimum":10,"maximum":1.5}}}`,
		"requestedSchema.properties.n.minimum", "must not exceed maximum (10 > 1.5)"},
	{"minimum not a number", `{"type":"object","properties":{"n":{"type":"integer","minimum":"1"}}}`,
		"requestedSchema.properties.n.minimum", "must be a number, got string"},
	{"maximum beyond a double", `{"type":"object","properties":{"n":{"type":"number","maximum":1e999}}}`,
		"requestedSchema.properties.n.maximum", "must be a finite number within the range of a double"},
	{"minItems above maxItems", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":3,"maxItems":2}}}`,
		"requestedSchema.properties.m.minItems", "must not exceed maxItems (3 > 2)"},
	{"minItems above the options", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b"]},"minItems":3}}}`,
		"requestedSchema.properties.m.minItems", "asks for 3 selections but there are only 2 options"},
	{"negative maxItems", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a"]},"maxItems":-1}}}`,
		"requestedSchema.properties.m.maxItems", "must be a non-negative integer"},
	{"default outside enum", `{"type":"object","properties":{"c":{"type":"string","enum":["Red","Green"],"default":"Purple"}}}`,
		"requestedSchema.properties.c.default", `must be one of "Red", "Green"`},
	{"default outside oneOf", `{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"r","title":"Red"}],"default":"Red"}}}`,
		"requestedSchema.properties.c.default", `must be one of "r"`},
	{"default above maximum", `{"type":"object","properties":{"n":{"type":"number","maximum":100,"default":150}}}`,
		"requestedSchema.properties.n.default", "must be at most 100"},
	{"default below minimum", `{"type":"object","properties":{"n":{"type":"integer","minimum":18,"default":17}}}`,
		"requestedSchema.properties.n.default", "must be at least 18"},
	{"fractional integer default", `{"type":"object","properties":{"n":{"type":"integer","default":1.5}}}`,
		"requestedSchema.properties.n.default", "must be an integer"},
	{"default of the wrong type", `{"type":"object","properties":{"n":{"type":"number","default":"50"}}}`,
		"requestedSchema.properties.n.default", "must be a number, got string"},
	{"boolean default as string", `{"type":"object","properties":{"b":{"type":"boolean","default":"false"}}}`,
		"requestedSchema.properties.b.default", "must be a boolean, got string"},
	{"default too long", `{"type":"object","properties":{"s":{"type":"string","maxLength":3,"default":"four"}}}`,
		"requestedSchema.properties.s.default", "must be at most 3 characters long, got 4"},
	{"default failing its format", `{"type":"object","properties":{"d":{"type":"string","format":"date","default":"2025-02-30"}}}`,
		"requestedSchema.properties.d.default", "must be a calendar date formatted YYYY-MM-DD"},
	{"multi-select default outside options", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b"]},"default":["a","z"]}}}`,
		"requestedSchema.properties.m.default", `item 1 must be one of "a", "b"`},
	{"multi-select default with repeats", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b"]},"default":["a","a"]}}}`,
		"requestedSchema.properties.m.default", "item 1 repeats item 0: selections must be unique"},
	{"multi-select default as string", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a"]},"default":"a"}}}`,
		"requestedSchema.properties.m.default", "must be an array of strings, got string"},
	{"multi-select default above maxItems", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":1,"default":["a","b"]}}}`,
		"requestedSchema.properties.m.default", "must have at most 1 item, got 2"},
	{"duplicate property", `{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"number"}}}`,
		"requestedSchema.properties.a", "property is declared more than once"},
	{"duplicate keyword", `{"type":"object","properties":{"a":{"type":"string","type":"number"}}}`,
		"requestedSchema.properties.a.type", "keyword appears more than once"},
	{"empty property name", `{"type":"object","properties":{"":{"type":"string"}}}`,
		"requestedSchema.properties", "property names must not be empty"},
	{"title not a string", `{"type":"object","properties":{"a":{"type":"string","title":7}}}`,
		"requestedSchema.properties.a.title", "must be a string, got number"},
	{"too many properties", tooManyProperties(65),
		"requestedSchema.properties", "65 properties exceed the limit of 64"},
	{"too many options", tooManyOptions(257),
		"requestedSchema.properties.e.enum", "257 options exceed the limit of 256"},
	{"too long title", `{"type":"object","properties":{"a":{"type":"string","title":"` + strings.Repeat("é", 4097) + `"}}}`,
		"requestedSchema.properties.a.title", "4097 characters exceed the limit of 4096"},
	{"too long description", `{"type":"object","properties":{"a":{"type":"string","description":"` + strings.Repeat("x", 5000) + `"}}}`,
		"requestedSchema.properties.a.description", "5000 characters exceed the limit of 4096"},
}

func TestNewRequestDoesNotPileUpRequiredErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []blocks.FieldError
	}{
		{name: "required naming an invalid property",
			schema: `{"type":"object","properties":{"a":{"type":"object"}},"required":["a"]}`,
			want:   []blocks.FieldError{{Field: "requestedSchema.properties.a.type", Detail: "nested objects are not supported"}}},
		{name: "required beside unreadable properties",
			schema: `{"type":"object","properties":[],"required":["a"]}`,
			want:   []blocks.FieldError{{Field: "requestedSchema.properties", Detail: "must be a JSON object keyed by property name, got array"}}},
		{name: "required longer than the property limit",
			schema: `{"type":"object","properties":{},"required":[` + strings.Repeat(`"x",`, 64) + `"x"]}`,
			want:   []blocks.FieldError{{Field: "requestedSchema.required", Detail: "65 names exceed the limit of 64 properties"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := elicit.NewRequest("m", json.RawMessage(tc.schema), nil)
			assert.Equal(t, tc.want, mustFieldErrors(t, err))
		})
	}
}

func tooManyProperties(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"boolean"}`, i)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

func tooManyOptions(n int) string {
	opts := make([]string, n)
	for i := range opts {
		opts[i] = fmt.Sprintf(`"o%d"`, i)
	}
	return `{"type":"object","properties":{"e":{"type":"string","enum":[` + strings.Join(opts, ",") + `]}}}`
}

func TestNewRequestRejectsSchemas(t *testing.T) {
	for _, tc := range rejectedSchemas {
		t.Run(tc.name, func(t *testing.T) {
			req, err := elicit.NewRequest("Please answer", json.RawMessage(tc.schema), nil)
			assert.Nil(t, req)
			errs := mustFieldErrors(t, err)
			assert.Contains(t, errs, blocks.FieldError{Field: tc.field, Detail: tc.detail}, "all violations: %v", errs)
			assert.False(t, elicit.IsTrivialConfirm(json.RawMessage(tc.schema)))
		})
	}
}

func TestNewRequestReportsEveryViolation(t *testing.T) {
	schema := `{"type":"object","extra":1,"properties":{
		"a":{"type":"string","pattern":"x","minLength":-1},
		"b":{"type":"object"},
		"c":{"type":"string","enum":["x","x"]}},
		"required":["zz"]}`
	_, err := elicit.NewRequest("", json.RawMessage(schema), nil)
	errs := mustFieldErrors(t, err)
	want := []blocks.FieldError{
		{Field: "message", Detail: "is required: it tells the user what is asked"},
		{Field: "requestedSchema.extra", Detail: `unknown keyword "extra"`},
		{Field: "requestedSchema.properties.a.pattern", Detail: "pattern is not supported: frontends do not share one regular expression dialect"},
		{Field: "requestedSchema.properties.a.minLength", Detail: "must be a non-negative integer"},
		{Field: "requestedSchema.properties.b.type", Detail: "nested objects are not supported"},
		{Field: "requestedSchema.properties.c.enum[1]", Detail: `duplicate value "x"`},
		{Field: "requestedSchema.required[0]", Detail: `"zz" is not a declared property`},
	}
	assert.Equal(t, want, errs)
}

func TestLimits(t *testing.T) {
	small := elicit.Limits{MaxProperties: 2, MaxOptions: 2, MaxTextLen: 5}
	tests := []struct {
		name    string
		limits  elicit.Limits
		message string
		schema  string
		want    []blocks.FieldError
	}{
		{name: "within small limits", limits: small, message: "héllo",
			schema: `{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"title":"12345"},"b":{"type":"boolean"}}}`},
		{name: "message too long", limits: small, message: "hello!",
			schema: `{"type":"object","properties":{}}`,
			want:   []blocks.FieldError{{Field: "message", Detail: "6 characters exceed the limit of 5"}}},
		{name: "too many properties", limits: small, message: "m",
			schema: `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"boolean"},"c":{"type":"boolean"}}}`,
			want:   []blocks.FieldError{{Field: "requestedSchema.properties", Detail: "3 properties exceed the limit of 2"}}},
		{name: "too many titled options", limits: small, message: "m",
			schema: `{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"const":"1","title":"1"},{"const":"2","title":"2"},{"const":"3","title":"3"}]}}}}`,
			want:   []blocks.FieldError{{Field: "requestedSchema.properties.a.items.anyOf", Detail: "3 options exceed the limit of 2"}}},
		{name: "too long option title", limits: small, message: "m",
			schema: `{"type":"object","properties":{"a":{"type":"string","oneOf":[{"const":"1","title":"longer"}]}}}`,
			want:   []blocks.FieldError{{Field: "requestedSchema.properties.a.oneOf[0].title", Detail: "6 characters exceed the limit of 5"}}},
		{name: "too long enum value", limits: small, message: "m",
			schema: `{"type":"object","properties":{"a":{"type":"string","enum":["longer"]}}}`,
			want:   []blocks.FieldError{{Field: "requestedSchema.properties.a.enum[0]", Detail: "6 characters exceed the limit of 5"}}},
		{name: "zero limits mean the defaults", limits: elicit.Limits{}, message: strings.Repeat("x", 4096),
			schema: tooManyProperties(64)},
		{name: "default message limit", limits: elicit.Limits{MaxProperties: 1}, message: strings.Repeat("x", 4097),
			schema: `{"type":"object","properties":{}}`,
			want:   []blocks.FieldError{{Field: "message", Detail: "4097 characters exceed the limit of 4096"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := tc.limits.NewRequest(tc.message, json.RawMessage(tc.schema), nil)
			if tc.want == nil {
				require.NoError(t, err)
				assert.Equal(t, tc.message, req.Message)
				return
			}
			assert.Equal(t, tc.want, mustFieldErrors(t, err))
		})
	}
}

func TestWidgetHints(t *testing.T) {
	schema := `{"type":"object","properties":{"node":{"type":"string","title":"Article"},"when":{"type":"string","format":"date"}}}`
	tests := []struct {
		name    string
		widgets any
		want    []blocks.FieldError
	}{
		{name: "hint for a declared property", widgets: map[string]any{
			"node": map[string]any{"widget": "entity_autocomplete", "target_type": "node", "bundles": []string{"article"}}}},
		{name: "hints built with Go types", widgets: map[string]map[string]string{"when": {"widget": "datepicker"}}},
		{name: "hint for an undeclared property", widgets: map[string]any{"nodes": map[string]any{"widget": "x"}},
			want: []blocks.FieldError{{Field: `_meta["drupal.org/ai.widgets"].nodes`, Detail: `"nodes" is not a declared property`}}},
		{name: "hint without widget", widgets: map[string]any{"node": map[string]any{"target_type": "node"}},
			want: []blocks.FieldError{{Field: `_meta["drupal.org/ai.widgets"].node.widget`, Detail: "is required: a non-empty string naming the widget"}}},
		{name: "hint with a non-string widget", widgets: map[string]any{"node": map[string]any{"widget": 3}},
			want: []blocks.FieldError{{Field: `_meta["drupal.org/ai.widgets"].node.widget`, Detail: "is required: a non-empty string naming the widget"}}},
		{name: "hint not an object", widgets: map[string]any{"node": "entity_autocomplete"},
			want: []blocks.FieldError{{Field: `_meta["drupal.org/ai.widgets"].node`, Detail: "must be an object with a widget name, got string"}}},
		{name: "hints not an object", widgets: []any{"node"},
			want: []blocks.FieldError{{Field: `_meta["drupal.org/ai.widgets"]`, Detail: "must be an object keyed by property name, got array"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := elicit.NewRequest("Pick one", json.RawMessage(schema), map[string]any{blocks.MetaWidgets: tc.widgets})
			if tc.want != nil {
				assert.Equal(t, tc.want, mustFieldErrors(t, err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, schema, string(req.RequestedSchema), "a hint does not change the schema")
			encoded := mustMarshal(t, req)
			var wire struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			require.NoError(t, json.Unmarshal(encoded, &wire))
			assert.JSONEq(t, string(mustMarshal(t, tc.widgets)), string(wire.Meta[blocks.MetaWidgets]))
		})
	}
}

func TestMetaMustBeJSON(t *testing.T) {
	_, err := elicit.NewRequest("m", json.RawMessage(`{"type":"object","properties":{}}`),
		map[string]any{"example.com/x": make(chan int)})
	errs := mustFieldErrors(t, err)
	assert.Equal(t, "_meta", errs[0].Field)
}

func TestIsConfirm(t *testing.T) {
	tests := []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{}}`, true},
		{`{"$schema":"x","type":"object","properties":{"ok":{"type":"boolean","title":"Delete it?","default":false}},"required":["ok"]}`, true},
		{`{"type":"object","properties":{"ok":{"type":"string"}}}`, false},
		{`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"boolean"}}}`, false},
		{`{"type":"object","properties":{"ok":{"type":"string","enum":["yes","no"]}}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.schema, func(t *testing.T) {
			assert.Equal(t, tc.want, elicit.IsTrivialConfirm(json.RawMessage(tc.schema)))
			assert.Equal(t, tc.want, mustNewRequest(t, tc.schema).IsConfirm())
		})
	}
	assert.False(t, elicit.IsTrivialConfirm(json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean","default":"yes"}}}`)),
		"an invalid schema is no confirm")
}
