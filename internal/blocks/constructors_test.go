package blocks

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// requireRoundTrips checks that a constructed block decodes back to itself,
// which is what "produces a valid block" means for a constructor.
func requireRoundTrips(tb testing.TB, b ContentBlock) []byte {
	tb.Helper()
	data := mustMarshal(tb, b)
	back, err := Decode(data)
	require.NoError(tb, err, "constructed block %s does not decode", data)
	require.Equal(tb, string(data), string(mustMarshal(tb, back)))
	return data
}

func TestConstructors(t *testing.T) {
	tests := []struct {
		name  string
		build func() (ContentBlock, error)
		want  string
	}{
		{"text", func() (ContentBlock, error) { return Text("Tool result text"), nil }, `{"type":"text","text":"Tool result text"}`},
		{"empty text", func() (ContentBlock, error) { return Text(""), nil }, `{"type":"text","text":""}`},
		{"image", func() (ContentBlock, error) { return Image(pngBase64, "image/png") }, `{"type":"image","data":"` + pngBase64 + `","mimeType":"image/png"}`},
		{"audio", func() (ContentBlock, error) { return Audio(wavBase64, "audio/wav") }, `{"type":"audio","data":"` + wavBase64 + `","mimeType":"audio/wav"}`},
		{"resource link", func() (ContentBlock, error) {
			return ResourceLink("file:///project/src/main.rs", "main.rs", LinkOptions{})
		}, `{"type":"resource_link","uri":"file:///project/src/main.rs","name":"main.rs"}`},
		{"resource link with options", func() (ContentBlock, error) {
			return ResourceLink("https://example.com/report.pdf", "report.pdf", LinkOptions{
				Title: "Q3 report", Description: "Quarterly numbers", MimeType: "application/pdf", Size: ptr(int64(0)),
				Icons: []Icon{{Src: "https://example.com/pdf.png", MimeType: "image/png", Sizes: []string{"48x48"}, Theme: "dark"}},
			})
		}, `{"type":"resource_link","uri":"https://example.com/report.pdf","name":"report.pdf","title":"Q3 report","description":"Quarterly numbers","mimeType":"application/pdf","size":0,"icons":[{"src":"https://example.com/pdf.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}]}`},
		{"embedded text", func() (ContentBlock, error) {
			return EmbeddedText("file:///project/src/main.rs", "text/x-rust", "fn main() {}")
		}, `{"type":"resource","resource":{"uri":"file:///project/src/main.rs","mimeType":"text/x-rust","text":"fn main() {}"}}`},
		{"embedded empty text without mime type", func() (ContentBlock, error) {
			return EmbeddedResource(ResourceContents{URI: "file:///empty", Text: ptr("")})
		}, `{"type":"resource","resource":{"uri":"file:///empty","text":""}}`},
		{"embedded blob", func() (ContentBlock, error) { return EmbeddedBlob("file:///logo.png", "image/png", pngBase64) },
			`{"type":"resource","resource":{"uri":"file:///logo.png","mimeType":"image/png","blob":"` + pngBase64 + `"}}`},
		{"entity card", func() (ContentBlock, error) { return EntityCard("node", "42", testUUID, "") },
			`{"type":"resource_link","uri":"entity:node/42","name":"node/42","_meta":{"drupal.org/ai.entity":{"entity_type":"node","id":"42","uuid":"` + testUUID + `","view_mode":"teaser"}}}`},
		{"entity card with view mode, escaped id and upper-case uuid", func() (ContentBlock, error) {
			return EntityCard("taxonomy_term", "a b/c", "0196A3B4-7C2D-7E8F-9A0B-1C2D3E4F5A6B", "full")
		}, `{"type":"resource_link","uri":"entity:taxonomy_term/a%20b%2Fc","name":"taxonomy_term/a b/c","_meta":{"drupal.org/ai.entity":{"entity_type":"taxonomy_term","id":"a b/c","uuid":"` + testUUID + `","view_mode":"full"}}}`},
		{"entity card with title", func() (ContentBlock, error) {
			return EntityCardWith(EntityRef{EntityType: "node", ID: "7", UUID: testUUID}, LinkOptions{Title: "Hello"})
		}, `{"type":"resource_link","uri":"entity:node/7","name":"node/7","title":"Hello","_meta":{"drupal.org/ai.entity":{"entity_type":"node","id":"7","uuid":"` + testUUID + `","view_mode":"teaser"}}}`},
		{"annotations", func() (ContentBlock, error) {
			return Text("x").WithAnnotations(Annotations{Audience: []Role{RoleUser}, Priority: ptr(0.0), LastModified: "2025-05-03T14:30:00Z"})
		}, `{"type":"text","text":"x","annotations":{"audience":["user"],"priority":0,"lastModified":"2025-05-03T14:30:00Z"}}`},
		{"meta", func() (ContentBlock, error) {
			return Text("x").WithMeta(MetaSuggestedReplies, []string{"Yes", "No"})
		}, `{"type":"text","text":"x","_meta":{"drupal.org/ai.suggested_replies":["Yes","No"]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.build()
			require.NoError(t, err)
			got := requireRoundTrips(t, b)
			assert.JSONEq(t, tc.want, string(got))
		})
	}
}

func TestConstructorsReject(t *testing.T) {
	tests := []struct {
		name  string
		build func() (ContentBlock, error)
		want  []FieldError
	}{
		{"image bad base64 and no mime type", func() (ContentBlock, error) { return Image("abc", "") }, []FieldError{{"mimeType", "must not be empty"}, {"data", "not valid base64"}}},
		{"audio bad base64", func() (ContentBlock, error) { return Audio("AAAA\n", "audio/wav") }, []FieldError{{"data", "not valid base64"}}},
		{"link without uri and name", func() (ContentBlock, error) { return ResourceLink("", "", LinkOptions{}) }, []FieldError{{"uri", "must not be empty"}, {"name", "must not be empty"}}},
		{"link negative size", func() (ContentBlock, error) { return ResourceLink("file:///u", "n", LinkOptions{Size: ptr(int64(-1))}) }, []FieldError{{"size", "must be a non-negative number"}}},
		{"link bad icon", func() (ContentBlock, error) {
			return ResourceLink("file:///u", "n", LinkOptions{Icons: []Icon{{Src: "https://e.com/s", Theme: "sepia"}}})
		}, []FieldError{{"icons[0].theme", `must be "light" or "dark"`}}},
		{"embedded without uri", func() (ContentBlock, error) { return EmbeddedText("", "", "x") }, []FieldError{{"resource.uri", "must not be empty"}}},
		{"embedded both", func() (ContentBlock, error) {
			return EmbeddedResource(ResourceContents{URI: "file:///u", Text: ptr("a"), Blob: ptr("AAAA")})
		}, []FieldError{{"resource", "must have exactly one of text and blob, not both"}}},
		{"embedded neither", func() (ContentBlock, error) { return EmbeddedResource(ResourceContents{URI: "file:///u"}) }, []FieldError{{"resource", "must have text or blob"}}},
		{"embedded bad blob", func() (ContentBlock, error) { return EmbeddedBlob("file:///u", "", "!!") }, []FieldError{{"resource.blob", "not valid base64"}}},
		{"entity card bad fields", func() (ContentBlock, error) { return EntityCard("Node", "", "not-a-uuid", "") }, []FieldError{
			{"entity_type", "must be a machine name: lowercase letters, digits and underscores"}, {"id", "must not be empty"}, {"uuid", "must be a UUID"},
		}},
		{"priority above 1", func() (ContentBlock, error) { return Text("x").WithAnnotations(Annotations{Priority: ptr(1.5)}) }, []FieldError{{"annotations.priority", "must be between 0 and 1"}}},
		{"priority NaN", func() (ContentBlock, error) { return Text("x").WithAnnotations(Annotations{Priority: ptr(math.NaN())}) }, []FieldError{{"annotations.priority", "must be between 0 and 1"}}},
		{"bad audience", func() (ContentBlock, error) {
			return Text("x").WithAnnotations(Annotations{Audience: []Role{"system"}})
		}, []FieldError{{"annotations.audience[0]", `must be "user" or "assistant"`}}},
		{"bad lastModified", func() (ContentBlock, error) {
			return Text("x").WithAnnotations(Annotations{LastModified: "2025-05-03 14:30"})
		}, []FieldError{{"annotations.lastModified", "must be an RFC 3339 date-time with a time zone offset"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.build()
			requireFieldErrors(t, tc.want, err)
		})
	}
}

func TestWithMetaRefusesToMint(t *testing.T) {
	tests := []struct {
		key  string
		want error
	}{
		{"io.modelcontextprotocol/x", ErrReservedMetaKey},
		{"dev.mcp/x", ErrReservedMetaKey},
		{"drupal.org/ai/citations", ErrInvalidMetaKey},
		{"drupal.org/", ErrInvalidMetaKey},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			_, err := Text("x").WithMeta(tc.key, 1)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err := Text("x").WithMeta("example.com/x.y", func() {})
	assert.Error(t, err, "a value that cannot be JSON")
}

func TestWithMethodsDoNotModifyTheOriginal(t *testing.T) {
	orig, err := Text("x").WithMeta("example.com/a.b", 1)
	require.NoError(t, err)
	before := string(mustMarshal(t, orig))

	withMore, err := orig.WithMeta("example.com/a.c", map[string]any{"n": 2.5})
	require.NoError(t, err)
	withAnn, err := orig.WithAnnotations(Annotations{Priority: ptr(0.5)})
	require.NoError(t, err)
	noAnn, err := withAnn.WithAnnotations(Annotations{})
	require.NoError(t, err)

	assert.Equal(t, before, string(mustMarshal(t, orig)))
	assert.JSONEq(t, `{"type":"text","text":"x","_meta":{"example.com/a.b":1,"example.com/a.c":{"n":2.5}}}`, string(mustMarshal(t, withMore)))
	assert.JSONEq(t, `{"type":"text","text":"x","_meta":{"example.com/a.b":1},"annotations":{"priority":0.5}}`, string(mustMarshal(t, withAnn)))
	assert.Equal(t, before, string(mustMarshal(t, noAnn)))
}

func TestEntityAccessor(t *testing.T) {
	card, err := EntityCard("node", "42", testUUID, "")
	require.NoError(t, err)
	got, ok := card.Entity()
	require.True(t, ok)
	assert.Equal(t, EntityRef{EntityType: "node", ID: "42", UUID: testUUID, ViewMode: "teaser"}, got)
	assert.Equal(t, "entity:node/42", card.URI())

	var decoded EntityRef
	found, err := card.DecodeMetaValue(MetaEntity, &decoded)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, got, decoded)

	plain, err := ResourceLink("https://example.com", "example", LinkOptions{})
	require.NoError(t, err)
	_, ok = plain.Entity()
	assert.False(t, ok)
}

func TestMustBlock(t *testing.T) {
	assert.Equal(t, TypeImage, MustBlock(Image("AAAA", "image/png")).Type())
	assert.Panics(t, func() { MustBlock(Image("A", "image/png")) })
}

func TestConstructedBlockInsideJSON(t *testing.T) {
	card, err := EntityCard("node", "1", testUUID, "")
	require.NoError(t, err)
	data := mustMarshal(t, struct {
		Blocks []ContentBlock `json:"content_blocks"`
	}{[]ContentBlock{Text("<hi>"), card}})
	got, err := DecodeList(mustJSONArray(t, data, "content_blocks"), "content_blocks")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "<hi>", got[0].Text())
}

func mustJSONArray(tb testing.TB, data []byte, key string) []byte {
	tb.Helper()
	var m map[string]json.RawMessage
	require.NoError(tb, json.Unmarshal(data, &m))
	return m[key]
}
