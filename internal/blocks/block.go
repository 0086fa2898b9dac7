package blocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
)

// The five MCP content block types.
const (
	TypeText         = "text"
	TypeImage        = "image"
	TypeAudio        = "audio"
	TypeResourceLink = "resource_link"
	TypeResource     = "resource"
)

// ContentBlock is one MCP content block of any of the five types, held as the
// JSON object it is on the wire. Every ContentBlock that exists outside this
// package has been validated; fields chatd does not know are kept and written
// back unchanged. A ContentBlock is immutable: the With methods return a
// modified copy. The zero value is not a valid block and fails to marshal.
type ContentBlock struct {
	// obj is the block as a UseNumber decode yields it: map[string]any,
	// []any, string, json.Number, bool and nil, nothing else. Numbers stay
	// json.Number so they are written back exactly as they were read.
	obj map[string]any
}

// Type returns the block's type: text, image, audio, resource_link or
// resource; "" for the zero ContentBlock.
func (b ContentBlock) Type() string { return b.str("type") }

// MarshalJSON encodes the block as its MCP JSON object: "type" first, every
// other key in sorted order, unknown fields included.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	if b.obj == nil {
		return nil, errors.New("blocks: cannot marshal the zero ContentBlock")
	}
	return appendObject(make([]byte, 0, 128), b.obj, "type")
}

// UnmarshalJSON decodes and validates one block. On failure it returns a
// *ValidationError whose paths are relative to the block (resource.blob,
// annotations.priority) and leaves b unchanged.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	v, err := decodeJSON(data)
	if err != nil {
		return &ValidationError{Errors: []FieldError{{Detail: err.Error()}}}
	}
	var ve ValidationError
	obj := validateBlockValue(v, "", &ve)
	if err := ve.Err(); err != nil {
		return err
	}
	b.obj = obj
	return nil
}

// Decode decodes and validates one block; see UnmarshalJSON.
func Decode(data []byte) (ContentBlock, error) {
	var b ContentBlock
	err := b.UnmarshalJSON(data)
	return b, err
}

// DecodeList decodes and validates a JSON array of blocks. Every violation is
// reported at once in a *ValidationError, each under path with the block's
// index: with path "content_blocks", content_blocks[2].resource.blob. Input
// that is not JSON, or not an array (null included), is one violation at path.
func DecodeList(data []byte, path string) ([]ContentBlock, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, &ValidationError{Errors: []FieldError{{Field: path, Detail: err.Error()}}}
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, &ValidationError{Errors: []FieldError{{Field: path, Detail: "must be an array of content blocks, not " + kindOf(v)}}}
	}
	var ve ValidationError
	out := make([]ContentBlock, len(arr))
	for i, e := range arr {
		out[i].obj = validateBlockValue(e, JoinPath(path, "["+strconv.Itoa(i)+"]"), &ve)
	}
	if err := ve.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeJSON decodes exactly one JSON value, numbers as json.Number.
func decodeJSON(data []byte) (any, error) { return parseJSON(data) }

// Text returns the text of a text block, and "" for other types.
func (b ContentBlock) Text() string {
	if b.Type() != TypeText {
		return ""
	}
	return b.str("text")
}

// Data returns the base64 data of an image or audio block, and "" otherwise.
func (b ContentBlock) Data() string {
	if t := b.Type(); t != TypeImage && t != TypeAudio {
		return ""
	}
	return b.str("data")
}

// MimeType returns the mimeType of an image, audio or resource_link block
// ("" when absent); for an embedded resource see Resource.
func (b ContentBlock) MimeType() string {
	if b.Type() == TypeResource {
		return ""
	}
	return b.str("mimeType")
}

// URI returns the uri of a resource_link block or of an embedded resource,
// and "" for other types.
func (b ContentBlock) URI() string {
	switch b.Type() {
	case TypeResourceLink:
		return b.str("uri")
	case TypeResource:
		r, _ := b.obj["resource"].(map[string]any)
		s, _ := r["uri"].(string)
		return s
	}
	return ""
}

// Name returns the name of a resource_link block, and "" otherwise.
func (b ContentBlock) Name() string {
	if b.Type() != TypeResourceLink {
		return ""
	}
	return b.str("name")
}

// Title returns the title of a resource_link block ("" when absent).
func (b ContentBlock) Title() string {
	if b.Type() != TypeResourceLink {
		return ""
	}
	return b.str("title")
}

// Description returns the description of a resource_link block ("" when
// absent).
func (b ContentBlock) Description() string {
	if b.Type() != TypeResourceLink {
		return ""
	}
	return b.str("description")
}

// Size returns the size of a resource_link block and whether it has one.
func (b ContentBlock) Size() (float64, bool) {
	if b.Type() != TypeResourceLink {
		return 0, false
	}
	n, ok := b.obj["size"].(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

// Icons returns the icons of a resource_link block (nil when absent).
func (b ContentBlock) Icons() []Icon {
	if b.Type() != TypeResourceLink {
		return nil
	}
	arr, _ := b.obj["icons"].([]any)
	if arr == nil {
		return nil
	}
	out := make([]Icon, 0, len(arr))
	for _, e := range arr {
		m, _ := e.(map[string]any)
		ic := Icon{}
		ic.Src, _ = m["src"].(string)
		ic.MimeType, _ = m["mimeType"].(string)
		ic.Theme, _ = m["theme"].(string)
		if sizes, ok := m["sizes"].([]any); ok {
			ic.Sizes = make([]string, len(sizes))
			for i, s := range sizes {
				ic.Sizes[i], _ = s.(string)
			}
		}
		out = append(out, ic)
	}
	return out
}

// Resource returns the contents of an embedded resource block and whether b
// is one. Exactly one of the returned Text and Blob is set.
func (b ContentBlock) Resource() (ResourceContents, bool) {
	if b.Type() != TypeResource {
		return ResourceContents{}, false
	}
	m, _ := b.obj["resource"].(map[string]any)
	var r ResourceContents
	r.URI, _ = m["uri"].(string)
	r.MimeType, _ = m["mimeType"].(string)
	if s, ok := m["text"].(string); ok {
		r.Text = &s
	}
	if s, ok := m["blob"].(string); ok {
		r.Blob = &s
	}
	return r, true
}

// Annotations returns the block's annotations and whether it has any.
func (b ContentBlock) Annotations() (Annotations, bool) {
	m, ok := b.obj["annotations"].(map[string]any)
	if !ok {
		return Annotations{}, false
	}
	var a Annotations
	if aud, ok := m["audience"].([]any); ok {
		a.Audience = make([]Role, len(aud))
		for i, r := range aud {
			s, _ := r.(string)
			a.Audience[i] = Role(s)
		}
	}
	if n, ok := m["priority"].(json.Number); ok {
		if f, err := strconv.ParseFloat(string(n), 64); err == nil {
			a.Priority = &f
		}
	}
	a.LastModified, _ = m["lastModified"].(string)
	return a, true
}

// Meta returns a copy of the block's _meta object (nil when it has none).
// Numbers in it are json.Number, as written; nested values are shared with
// the block and must not be modified.
func (b ContentBlock) Meta() map[string]any {
	m, _ := b.obj["_meta"].(map[string]any)
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

// MetaValue returns the value of one key of the block's _meta and whether it
// is present. Decode it into a typed value with DecodeMetaValue.
func (b ContentBlock) MetaValue(key string) (any, bool) {
	m, _ := b.obj["_meta"].(map[string]any)
	v, ok := m[key]
	return v, ok
}

// DecodeMetaValue decodes the block's _meta[key] into v, as json.Unmarshal
// would. It reports false, and leaves v alone, when the key is absent.
func (b ContentBlock) DecodeMetaValue(key string, v any) (bool, error) {
	raw, ok := b.MetaValue(key)
	if !ok {
		return false, nil
	}
	data, err := appendValue(nil, raw)
	if err != nil {
		return true, err
	}
	return true, json.Unmarshal(data, v)
}

// Entity returns the entity reference of an entity card (a resource_link
// whose _meta carries drupal.org/ai.entity) and whether b is one.
func (b ContentBlock) Entity() (EntityRef, bool) {
	if b.Type() != TypeResourceLink {
		return EntityRef{}, false
	}
	m, ok := b.MetaValue(MetaEntity)
	if !ok {
		return EntityRef{}, false
	}
	obj, ok := m.(map[string]any)
	if !ok {
		return EntityRef{}, false
	}
	var e EntityRef
	e.EntityType, _ = obj["entity_type"].(string)
	e.ID, _ = obj["id"].(string)
	e.UUID, _ = obj["uuid"].(string)
	e.ViewMode, _ = obj["view_mode"].(string)
	return e, e.EntityType != "" && e.ID != ""
}

// WithAnnotations returns a copy of b whose annotations are a, replacing any
// it had; the zero Annotations removes them. The result is validated, so an
// out-of-range priority or a bad audience is an error.
func (b ContentBlock) WithAnnotations(a Annotations) (ContentBlock, error) {
	if b.obj == nil {
		return ContentBlock{}, errors.New("blocks: WithAnnotations on the zero ContentBlock")
	}
	obj := maps.Clone(b.obj)
	if a.isZero() {
		delete(obj, "annotations")
	} else {
		obj["annotations"] = a.toJSON()
	}
	return newBlock(obj)
}

// WithMeta returns a copy of b with _meta[key] set to value. Because this
// mints a key, key must pass ValidateMintedMetaKey. value must encode to JSON
// with encoding/json; it is stored as that JSON.
func (b ContentBlock) WithMeta(key string, value any) (ContentBlock, error) {
	if b.obj == nil {
		return ContentBlock{}, errors.New("blocks: WithMeta on the zero ContentBlock")
	}
	if err := ValidateMintedMetaKey(key); err != nil {
		return ContentBlock{}, err
	}
	v, err := toJSONValue(value)
	if err != nil {
		return ContentBlock{}, fmt.Errorf("blocks: _meta value for %q: %w", key, err)
	}
	meta, _ := b.obj["_meta"].(map[string]any)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = make(map[string]any, 1)
	}
	meta[key] = v
	obj := maps.Clone(b.obj)
	obj["_meta"] = meta
	return newBlock(obj)
}

// toJSONValue turns any encodable Go value into the decoded-JSON form the
// block tree holds.
func toJSONValue(value any) (any, error) {
	data, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	return decodeJSON(data)
}

// newBlock validates obj and wraps it.
func newBlock(obj map[string]any) (ContentBlock, error) {
	var ve ValidationError
	validateBlock(obj, "", &ve)
	if err := ve.Err(); err != nil {
		return ContentBlock{}, err
	}
	return ContentBlock{obj: obj}, nil
}

func (b ContentBlock) str(key string) string {
	s, _ := b.obj[key].(string)
	return s
}
