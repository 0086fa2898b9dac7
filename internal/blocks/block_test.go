package blocks

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validBlocks are blocks that must decode and round-trip. The first ones are
// the examples of the MCP 2025-06-18 and 2025-11-25 specification pages.
var validBlocks = []struct {
	name     string
	typ      string
	json     string
	keepText []string // exact substrings the encoding must contain
}{
	{name: "spec text", typ: TypeText, json: `{"type":"text","text":"Tool result text"}`},
	{name: "spec image", typ: TypeImage, json: `{"type":"image","data":"` + pngBase64 + `","mimeType":"image/png"}`},
	{name: "spec audio", typ: TypeAudio, json: `{"type":"audio","data":"` + wavBase64 + `","mimeType":"audio/wav"}`},
	{name: "spec resource link", typ: TypeResourceLink, json: `{"type":"resource_link","uri":"file:///project/src/main.rs","name":"main.rs","description":"Primary application entry point","mimeType":"text/x-rust"}`},
	{name: "spec embedded resource", typ: TypeResource, json: `{"type":"resource","resource":{"uri":"file:///project/src/main.rs","mimeType":"text/x-rust","text":"fn main() {\n    println!(\"Hello world!\");\n}"},"annotations":{"audience":["user","assistant"],"priority":0.7,"lastModified":"2025-05-03T14:30:00Z"}}`},
	{name: "spec resource link with icons", typ: TypeResourceLink, json: `{"type":"resource_link","uri":"file:///project/assets/logo.png","name":"logo.png","title":"Project logo","size":2048,"icons":[{"src":"https://example.com/icon.png","mimeType":"image/png","sizes":["48x48","96x96"],"theme":"light"},{"src":"data:image/svg+xml;base64,PHN2Zy8+","sizes":["any"],"theme":"dark"}]}`},
	{name: "empty text kept", typ: TypeText, json: `{"type":"text","text":""}`, keepText: []string{`"text":""`}},
	{name: "empty image data", typ: TypeImage, json: `{"type":"image","data":"","mimeType":"image/png"}`},
	{name: "priority zero kept", typ: TypeText, json: `{"type":"text","text":"x","annotations":{"priority":0}}`, keepText: []string{`"priority":0}`}},
	{name: "priority one", typ: TypeText, json: `{"type":"text","text":"x","annotations":{"priority":1,"audience":[]}}`},
	{name: "numbers as written", typ: TypeResourceLink, json: `{"type":"resource_link","uri":"file:///u","name":"n","size":1.50,"annotations":{"priority":7e-1},"x-big":123456789012345678901234567890}`, keepText: []string{`"size":1.50`, `"priority":7e-1`, `"x-big":123456789012345678901234567890`}},
	{name: "fractional size", typ: TypeResourceLink, json: `{"type":"resource_link","uri":"file:///u","name":"n","size":0.5}`},
	{name: "lastModified with offset and fraction", typ: TypeAudio, json: `{"type":"audio","data":"AAAA","mimeType":"audio/ogg","annotations":{"lastModified":"2025-05-03T14:30:00.123+02:00"}}`},
	{name: "blob resource", typ: TypeResource, json: `{"type":"resource","resource":{"uri":"file:///img.png","blob":"` + pngBase64 + `"}}`},
	{name: "empty resource text", typ: TypeResource, json: `{"type":"resource","resource":{"uri":"file:///empty.txt","text":""}}`, keepText: []string{`"text":""`}},
	{name: "unknown fields at every level", typ: TypeResource, json: `{"type":"resource","x-top":{"nested":[1,"two",null,true]},` +
		`"annotations":{"priority":0.25,"x-color":"red"},` +
		`"resource":{"uri":"file:///a","text":"a","etag":"abc","annotations":{"priority":9},"_meta":{"example.com/x.y":1}},` +
		`"_meta":{"drupal.org/ai.citations":[{"uri":"https://example.com","title":"Example","x":{"deep":[{}]}}]}}`},
	{name: "unknown fields in icons", typ: TypeResourceLink, json: `{"type":"resource_link","uri":"file:///u","name":"n","icons":[{"src":"https://e.com/i.png","x-scale":2}]}`},
	{name: "fields of other types are unknown", typ: TypeText, json: `{"type":"text","text":"t","data":"not base64!","uri":5,"icons":"nope"}`},
	{name: "received reserved meta key", typ: TypeText, json: `{"type":"text","text":"t","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"1"},"progressToken":3}}`},
	{name: "html and unicode escapes", typ: TypeText, json: `{"type":"text","text":"<b>&amp;</b> \u00e9 \u2028 \ud83d\ude00 \t"}`},
}

func TestDecodeValidBlocksRoundTrip(t *testing.T) {
	for _, tc := range validBlocks {
		t.Run(tc.name, func(t *testing.T) {
			b := mustDecode(t, tc.json)
			assert.Equal(t, tc.typ, b.Type())

			got := mustMarshal(t, b)
			assert.JSONEq(t, tc.json, string(got))
			// JSONEq compares numbers as float64; this also checks the digits.
			assert.Equal(t, mustJSONValue(t, []byte(tc.json)), mustJSONValue(t, got))
			for _, s := range tc.keepText {
				assert.Contains(t, string(got), s)
			}

			again := mustMarshal(t, mustDecode(t, string(got)))
			assert.Equal(t, string(got), string(again), "re-encoding must be stable")
		})
	}
}

func TestDecodeAccessors(t *testing.T) {
	b := mustDecode(t, validBlocks[4].json) // spec embedded resource
	res, ok := b.Resource()
	require.True(t, ok)
	require.NotNil(t, res.Text)
	assert.Nil(t, res.Blob)
	assert.Equal(t, "file:///project/src/main.rs", res.URI)
	assert.Equal(t, "text/x-rust", res.MimeType)
	assert.Equal(t, "fn main() {\n    println!(\"Hello world!\");\n}", *res.Text)
	assert.Equal(t, "file:///project/src/main.rs", b.URI())

	a, ok := b.Annotations()
	require.True(t, ok)
	assert.Equal(t, []Role{RoleUser, RoleAssistant}, a.Audience)
	require.NotNil(t, a.Priority)
	assert.Equal(t, 0.7, *a.Priority)
	assert.Equal(t, "2025-05-03T14:30:00Z", a.LastModified)

	link := mustDecode(t, validBlocks[5].json)
	assert.Equal(t, "logo.png", link.Name())
	assert.Equal(t, "Project logo", link.Title())
	size, ok := link.Size()
	assert.True(t, ok)
	assert.Equal(t, 2048.0, size)
	assert.Equal(t, []Icon{
		{Src: "https://example.com/icon.png", MimeType: "image/png", Sizes: []string{"48x48", "96x96"}, Theme: "light"},
		{Src: "data:image/svg+xml;base64,PHN2Zy8+", Sizes: []string{"any"}, Theme: "dark"},
	}, link.Icons())

	text := mustDecode(t, `{"type":"text","text":"hi","_meta":{"a.b/c":{"n":1.0}}}`)
	assert.Equal(t, "hi", text.Text())
	assert.Equal(t, "", text.URI())
	assert.Equal(t, map[string]any{"a.b/c": map[string]any{"n": json.Number("1.0")}}, text.Meta())
	var v struct{ N float64 }
	found, err := text.DecodeMetaValue("a.b/c", &v)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, 1.0, v.N)

	img := mustDecode(t, validBlocks[1].json)
	assert.Equal(t, pngBase64, img.Data())
	assert.Equal(t, "image/png", img.MimeType())
	assert.Equal(t, "", img.Text())
}

func TestDecodeRejects(t *testing.T) {
	longRes := `{"type":"resource","resource":`
	tests := []struct {
		name string
		json string
		want []FieldError
	}{
		{"not JSON", `{"type":`, []FieldError{{"", "invalid JSON: unexpected end of input"}}},
		{"trailing data", `{"type":"text","text":"a"} {}`, []FieldError{{"", "invalid JSON at offset 27: data after the value"}}},
		{"array", `[]`, []FieldError{{"", "must be a content block object, not an array"}}},
		{"null", `null`, []FieldError{{"", "must be a content block object, not null"}}},
		{"missing type", `{"text":"a"}`, []FieldError{{"type", "is required"}}},
		{"type not a string", `{"type":1}`, []FieldError{{"type", "must be a string, not a number"}}},
		{"unknown type", `{"type":"video","uri":"x"}`, []FieldError{{"type", `unknown block type "video" (want text, image, audio, resource_link or resource)`}}},
		{"text missing", `{"type":"text"}`, []FieldError{{"text", "is required"}}},
		{"text wrong type", `{"type":"text","text":5}`, []FieldError{{"text", "must be a string, not a number"}}},
		{"text null", `{"type":"text","text":null}`, []FieldError{{"text", "must be a string, not null"}}},
		{"image missing both", `{"type":"image"}`, []FieldError{{"data", "is required"}, {"mimeType", "is required"}}},
		{"image data missing", `{"type":"image","mimeType":"image/png"}`, []FieldError{{"data", "is required"}}},
		{"image mimeType missing", `{"type":"image","data":"AAAA"}`, []FieldError{{"mimeType", "is required"}}},
		{"image bad base64", `{"type":"image","data":"not-base64!","mimeType":"image/png"}`, []FieldError{{"data", "not valid base64"}}},
		{"image unpadded base64", `{"type":"image","data":"iVBORw0KGgo","mimeType":"image/png"}`, []FieldError{{"data", "not valid base64"}}},
		{"image base64 with newline", `{"type":"image","data":"AAAA\nAAAA","mimeType":"image/png"}`, []FieldError{{"data", "not valid base64"}}},
		{"image url-safe base64", `{"type":"image","data":"-_-_","mimeType":"image/png"}`, []FieldError{{"data", "not valid base64"}}},
		{"image data number", `{"type":"image","data":12,"mimeType":"image/png"}`, []FieldError{{"data", "must be a base64 string, not a number"}}},
		{"audio mimeType wrong type", `{"type":"audio","data":"AAAA","mimeType":["audio/wav"]}`, []FieldError{{"mimeType", "must be a string, not an array"}}},
		{"link missing uri and name", `{"type":"resource_link"}`, []FieldError{{"uri", "is required"}, {"name", "is required"}}},
		{"link uri wrong type", `{"type":"resource_link","uri":{},"name":"n"}`, []FieldError{{"uri", "must be a string, not an object"}}},
		{"link name wrong type", `{"type":"resource_link","uri":"file:///u","name":false}`, []FieldError{{"name", "must be a string, not a boolean"}}},
		{"link optional strings wrong type", `{"type":"resource_link","uri":"file:///u","name":"n","title":1,"description":null,"mimeType":2}`, []FieldError{
			{"title", "must be a string, not a number"}, {"description", "must be a string, not null"}, {"mimeType", "must be a string, not a number"},
		}},
		{"link negative size", `{"type":"resource_link","uri":"file:///u","name":"n","size":-1}`, []FieldError{{"size", "must be a non-negative number"}}},
		{"link size string", `{"type":"resource_link","uri":"file:///u","name":"n","size":"12"}`, []FieldError{{"size", "must be a non-negative number"}}},
		{"link size too large", `{"type":"resource_link","uri":"file:///u","name":"n","size":1e400}`, []FieldError{{"size", "must be a non-negative number"}}},
		{"link icons not array", `{"type":"resource_link","uri":"file:///u","name":"n","icons":{}}`, []FieldError{{"icons", "must be an array, not an object"}}},
		{"link bad icons", `{"type":"resource_link","uri":"file:///u","name":"n","icons":[{"src":"https://e.com/a"},"x",{"mimeType":3,"sizes":["1x1",4],"theme":"blue"},{"src":"https://e.com/b","sizes":"any"}]}`, []FieldError{
			{"icons[1]", "must be an object, not a string"},
			{"icons[2].src", "is required"},
			{"icons[2].mimeType", "must be a string, not a number"},
			{"icons[2].sizes[1]", "must be a string, not a number"},
			{"icons[2].theme", `must be "light" or "dark"`},
			{"icons[3].sizes", "must be an array, not a string"},
		}},
		{"resource missing", `{"type":"resource"}`, []FieldError{{"resource", "is required"}}},
		{"resource not object", longRes + `"file:///a"}`, []FieldError{{"resource", "must be an object, not a string"}}},
		{"resource uri missing", longRes + `{"text":"a"}}`, []FieldError{{"resource.uri", "is required"}}},
		{"resource uri wrong type", longRes + `{"uri":1,"text":"a"}}`, []FieldError{{"resource.uri", "must be a string, not a number"}}},
		{"resource both text and blob", longRes + `{"uri":"file:///u","text":"a","blob":"AAAA"}}`, []FieldError{{"resource", "must have exactly one of text and blob, not both"}}},
		{"resource neither text nor blob", longRes + `{"uri":"file:///u","mimeType":"text/plain"}}`, []FieldError{{"resource", "must have text or blob"}}},
		{"resource bad blob", longRes + `{"uri":"file:///u","blob":"%%%%"}}`, []FieldError{{"resource.blob", "not valid base64"}}},
		{"resource text wrong type", longRes + `{"uri":"file:///u","text":{"a":1}}}`, []FieldError{{"resource.text", "must be a string, not an object"}}},
		{"resource mimeType wrong type", longRes + `{"uri":"file:///u","text":"a","mimeType":true}}`, []FieldError{{"resource.mimeType", "must be a string, not a boolean"}}},
		{"resource bad meta key", longRes + `{"uri":"file:///u","text":"a","_meta":{"a/b/c":1}}}`, []FieldError{{`resource._meta["a/b/c"]`, `invalid key: name must not contain "/" (use a dot: <domain>/<module>.<name>)`}}},
		{"annotations not object", `{"type":"text","text":"a","annotations":[]}`, []FieldError{{"annotations", "must be an object, not an array"}}},
		{"audience not array", `{"type":"text","text":"a","annotations":{"audience":"user"}}`, []FieldError{{"annotations.audience", "must be an array, not a string"}}},
		{"bad audience", `{"type":"text","text":"a","annotations":{"audience":["user","robot",1]}}`, []FieldError{
			{"annotations.audience[1]", `must be "user" or "assistant"`}, {"annotations.audience[2]", `must be "user" or "assistant"`},
		}},
		{"priority below 0", `{"type":"text","text":"a","annotations":{"priority":-0.1}}`, []FieldError{{"annotations.priority", "must be between 0 and 1"}}},
		{"priority above 1", `{"type":"text","text":"a","annotations":{"priority":1.0001}}`, []FieldError{{"annotations.priority", "must be between 0 and 1"}}},
		{"priority string", `{"type":"text","text":"a","annotations":{"priority":"high"}}`, []FieldError{{"annotations.priority", "must be between 0 and 1"}}},
		{"lastModified not a date", `{"type":"text","text":"a","annotations":{"lastModified":"yesterday"}}`, []FieldError{{"annotations.lastModified", "must be an RFC 3339 date-time with a time zone offset"}}},
		{"lastModified without offset", `{"type":"text","text":"a","annotations":{"lastModified":"2025-05-03T14:30:00"}}`, []FieldError{{"annotations.lastModified", "must be an RFC 3339 date-time with a time zone offset"}}},
		{"lastModified number", `{"type":"text","text":"a","annotations":{"lastModified":1746282600}}`, []FieldError{{"annotations.lastModified", "must be an RFC 3339 date-time with a time zone offset"}}},
		{"meta not object", `{"type":"text","text":"a","_meta":"x"}`, []FieldError{{"_meta", "must be an object, not a string"}}},
		{"meta bad keys sorted", `{"type":"text","text":"a","_meta":{"ok":1,"bad key":2,"drupal.org/ai/citations":[]}}`, []FieldError{
			{`_meta["bad key"]`, `invalid key: name must contain only letters, digits, "-", "_" and ".", not ' '`},
			{`_meta["drupal.org/ai/citations"]`, `invalid key: name must not contain "/" (use a dot: <domain>/<module>.<name>)`},
		}},
		{"common fields checked without a type", `{"annotations":{"priority":2},"_meta":{"":1}}`, []FieldError{
			{"type", "is required"}, {"annotations.priority", "must be between 0 and 1"}, {`_meta[""]`, "invalid key: key is empty"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.json))
			requireFieldErrors(t, tc.want, err)
		})
	}
}

func TestUnmarshalErrorLeavesBlockUnchanged(t *testing.T) {
	b := Text("keep")
	err := json.Unmarshal([]byte(`{"type":"text"}`), &b)
	requireFieldErrors(t, []FieldError{{"text", "is required"}}, err)
	assert.Equal(t, "keep", b.Text())
}

func TestErrorMessageNamesField(t *testing.T) {
	_, err := DecodeList([]byte(`[{"type":"text","text":"a"},{"type":"text","text":"b","annotations":{"priority":3}}]`), "content_blocks")
	require.Error(t, err)
	assert.Equal(t, "content_blocks[1].annotations.priority: must be between 0 and 1", err.Error())
}

func TestDecodeListReportsAllViolations(t *testing.T) {
	data := `[
		{"type":"text","text":"fine"},
		{"type":"image","data":"AAAA","mimeType":"image/png","annotations":{"priority":1.5,"audience":["bot"]}},
		{"type":"resource","resource":{"uri":"file:///u","blob":"@@@@"}},
		"not a block",
		{"type":"carousel"},
		{"type":"text","text":"x","_meta":{"drupal.org/":1}}
	]`
	_, err := DecodeList([]byte(data), "content_blocks")
	requireFieldErrors(t, []FieldError{
		{"content_blocks[1].annotations.audience[0]", `must be "user" or "assistant"`},
		{"content_blocks[1].annotations.priority", "must be between 0 and 1"},
		{"content_blocks[2].resource.blob", "not valid base64"},
		{"content_blocks[3]", "must be a content block object, not a string"},
		{"content_blocks[4].type", `unknown block type "carousel" (want text, image, audio, resource_link or resource)`},
		{`content_blocks[5]._meta["drupal.org/"]`, "invalid key: name after the prefix is empty"},
	}, err)
}

func TestDecodeList(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		want    []string // types
		wantErr []FieldError
	}{
		{name: "empty", json: `[]`, want: []string{}},
		{name: "several", json: `[{"type":"text","text":"a"},{"type":"resource_link","uri":"file:///u","name":"n"}]`, want: []string{TypeText, TypeResourceLink}},
		{name: "object", json: `{"type":"text","text":"a"}`, wantErr: []FieldError{{"content_blocks", "must be an array of content blocks, not an object"}}},
		{name: "null", json: `null`, wantErr: []FieldError{{"content_blocks", "must be an array of content blocks, not null"}}},
		{name: "empty input", json: ``, wantErr: []FieldError{{"content_blocks", "invalid JSON: no value"}}},
		{name: "malformed", json: `[{"type":"text",]`, wantErr: []FieldError{{"content_blocks", "invalid JSON at offset 16: invalid character ']' looking for beginning of object key string"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeList([]byte(tc.json), "content_blocks")
			if tc.wantErr != nil {
				requireFieldErrors(t, tc.wantErr, err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			types := make([]string, len(got))
			for i, b := range got {
				types[i] = b.Type()
			}
			assert.Equal(t, tc.want, types)
			assert.JSONEq(t, tc.json, string(mustMarshal(t, got)))
		})
	}
}

func TestMarshalZeroBlockFails(t *testing.T) {
	_, err := json.Marshal(ContentBlock{})
	assert.Error(t, err)
	_, err = ContentBlock{}.WithMeta("a", 1)
	assert.Error(t, err)
}

func TestMarshalEscapesLikeEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote \" backslash \\ slash /", "ctl \x00\x01\x1f\x7f", "nl\n cr\r tab\t", "\u2028\u2029", "bad utf8 \xff\xfe end", "<script>&</script>", "é😀"} {
		got := appendString(nil, s)
		var back string
		require.NoError(t, json.Unmarshal(got, &back), "output %q", got)
		want, err := json.Marshal(s)
		require.NoError(t, err)
		var wantBack string
		require.NoError(t, json.Unmarshal(want, &wantBack))
		assert.Equal(t, wantBack, back, "input %q", s)
	}
}

func TestIsBase64MatchesStdEncoding(t *testing.T) {
	for _, s := range []string{"", "AA==", "AAA=", "AAAA", "A===", "====", "AA=A", "A", "AAAAA", "AB+/", "AB-_", "AAAA====", "QUJD", "QUI=", "QQ==", "Q===", "=AAA", pngBase64, wavBase64, "QR==", "QUJ="} {
		_, err := base64.StdEncoding.DecodeString(s)
		assert.Equal(t, err == nil, isBase64(s), "input %q", s)
	}
	// The one deliberate difference: line breaks, which the decoder skips.
	assert.False(t, isBase64("AAAA\r\nAAAA"))
	assert.False(t, isBase64(strings.Repeat("A", 76)+"\n"+"AAAA"))
}
