package blocks

import (
	"encoding/json"
	"testing"
)

// benchMessage is a stored assistant message with five varied blocks, the
// unit a history page decodes.
var benchMessage = []byte(`{"id":"0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b","role":"assistant","message":"Here is what I found about the release.","timestamp":"2025-05-03T14:30:00.123Z",` +
	`"content_blocks":[` +
	`{"type":"text","text":"The release ships on Friday; see the notes below.","annotations":{"audience":["user"],"priority":0.9}},` +
	`{"type":"resource_link","uri":"entity:node/42","name":"node/42","title":"Release notes 11.2","_meta":{"drupal.org/ai.entity":{"entity_type":"node","id":"42","uuid":"0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b","view_mode":"teaser"}}},` +
	`{"type":"resource","resource":{"uri":"file:///project/CHANGELOG.md","mimeType":"text/markdown","text":"## 11.2\n- Faster history pages\n- MCP content blocks\n- Elicitation forms"},"annotations":{"audience":["user","assistant"],"priority":0.7,"lastModified":"2025-05-03T14:30:00Z"}},` +
	`{"type":"image","data":"` + pngBase64 + `","mimeType":"image/png"},` +
	`{"type":"resource_link","uri":"https://example.com/release.pdf","name":"release.pdf","mimeType":"application/pdf","size":48213,"icons":[{"src":"https://example.com/pdf.png","sizes":["48x48"]}]}` +
	`],"_meta":{"drupal.org/ai.citations":[{"uri":"https://example.com/release","title":"Release announcement","block_index":0}],"drupal.org/ai.suggested_replies":["What changed?","Thanks"]}}`)

// BenchmarkDecodeValidate decodes and validates benchMessage as history
// reading does; compare with BenchmarkDecodePlainJSON for the cost of
// validation and exact round-tripping.
func BenchmarkDecodeValidate(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMessage)))
	for b.Loop() {
		var m Message
		if err := json.Unmarshal(benchMessage, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePlainJSON decodes the same document into map[string]any,
// with no validation: the baseline.
func BenchmarkDecodePlainJSON(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMessage)))
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(benchMessage, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeMessage encodes the decoded benchMessage, as serving a
// history page does.
func BenchmarkEncodeMessage(b *testing.B) {
	var m Message
	if err := json.Unmarshal(benchMessage, &m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodePlainJSON encodes the map[string]any form: the baseline for
// BenchmarkEncodeMessage.
func BenchmarkEncodePlainJSON(b *testing.B) {
	var m map[string]any
	if err := json.Unmarshal(benchMessage, &m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}
