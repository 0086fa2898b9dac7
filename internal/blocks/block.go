package blocks

import (
	"encoding/json"
	"fmt"
)

// ContentBlock is one MCP content block. PLACEHOLDER: the blocks work replaces
// this file with the validated implementation; the exported API stays.
type ContentBlock struct {
	fields map[string]any
}

// Type returns the block's type: text, image, audio, resource_link or resource.
func (b ContentBlock) Type() string {
	t, _ := b.fields["type"].(string)
	return t
}

// MarshalJSON encodes the block as its MCP JSON object.
func (b ContentBlock) MarshalJSON() ([]byte, error) { return json.Marshal(b.fields) }

// UnmarshalJSON decodes and validates one block.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, &b.fields)
}

// DecodeList decodes a JSON array of blocks, reporting every violation with a
// path under path (content_blocks[2].resource.blob).
func DecodeList(data []byte, path string) ([]ContentBlock, error) {
	var out []ContentBlock
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// ValidateMeta checks the keys of a _meta object against the MCP key grammar,
// reporting violations under path; values are free-form.
func ValidateMeta(meta map[string]any, path string) error { return nil }

// Text returns a text block.
func Text(text string) ContentBlock {
	return ContentBlock{fields: map[string]any{"type": "text", "text": text}}
}
