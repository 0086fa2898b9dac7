package blocks

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/google/uuid"
)

// Annotations are MCP annotations for WithAnnotations and as returned by
// ContentBlock.Annotations.
type Annotations struct {
	// Audience lists who the block is for, "user" and/or "assistant"; nil
	// leaves the key out.
	Audience []Role
	// Priority is the importance from 0 (optional) to 1 (effectively
	// required); nil leaves the key out, and 0 is a real value that is kept.
	Priority *float64
	// LastModified is an RFC 3339 date-time with offset; "" leaves it out.
	LastModified string
}

func (a Annotations) isZero() bool {
	return a.Audience == nil && a.Priority == nil && a.LastModified == ""
}

func (a Annotations) toJSON() map[string]any {
	m := make(map[string]any, 3)
	if a.Audience != nil {
		aud := make([]any, len(a.Audience))
		for i, r := range a.Audience {
			aud[i] = string(r)
		}
		m["audience"] = aud
	}
	if a.Priority != nil {
		m["priority"] = json.Number(strconv.FormatFloat(*a.Priority, 'g', -1, 64))
	}
	if a.LastModified != "" {
		m["lastModified"] = a.LastModified
	}
	return m
}

// Icon is one entry of a resource_link's icons (MCP 2025-11-25).
type Icon struct {
	Src      string   // URI of the image, http(s) or a data: URI
	MimeType string   // "" leaves the key out
	Sizes    []string // such as "48x48" or "any"; nil leaves the key out
	Theme    string   // "light", "dark", or "" to leave the key out
}

func (ic Icon) toJSON() map[string]any {
	m := map[string]any{"src": ic.Src}
	if ic.MimeType != "" {
		m["mimeType"] = ic.MimeType
	}
	if ic.Sizes != nil {
		sizes := make([]any, len(ic.Sizes))
		for i, s := range ic.Sizes {
			sizes[i] = s
		}
		m["sizes"] = sizes
	}
	if ic.Theme != "" {
		m["theme"] = ic.Theme
	}
	return m
}

// LinkOptions are the optional fields of a resource_link block. Empty
// strings and nil leave their key out.
type LinkOptions struct {
	Title       string
	Description string
	MimeType    string
	Size        *int64 // bytes of the raw resource; must not be negative
	Icons       []Icon
}

// ResourceContents is the resource of an embedded resource block: a URI, an
// optional MIME type ("" leaves it out) and exactly one of Text and Blob
// (base64). Pointers, because an empty text is a valid resource.
type ResourceContents struct {
	URI      string
	MimeType string
	Text     *string
	Blob     *string
}

// EntityRef identifies a Drupal entity and how to render it; it is the value
// of _meta["drupal.org/ai.entity"] on an entity card.
type EntityRef struct {
	EntityType string `json:"entity_type"`
	ID         string `json:"id"`
	UUID       string `json:"uuid"`
	ViewMode   string `json:"view_mode"`
}

// DefaultViewMode is the view mode EntityCard uses when given none.
const DefaultViewMode = "teaser"

// Text returns a text block. Any string is valid text, the empty one included.
func Text(text string) ContentBlock {
	return ContentBlock{obj: map[string]any{"type": TypeText, "text": text}}
}

// Image returns an image block; base64Data must be standard padded base64
// and mimeType must not be empty.
func Image(base64Data, mimeType string) (ContentBlock, error) {
	return media(TypeImage, base64Data, mimeType)
}

// Audio returns an audio block; base64Data must be standard padded base64
// and mimeType must not be empty.
func Audio(base64Data, mimeType string) (ContentBlock, error) {
	return media(TypeAudio, base64Data, mimeType)
}

func media(typ, data, mimeType string) (ContentBlock, error) {
	var ve ValidationError
	if mimeType == "" {
		ve.Add("mimeType", "must not be empty")
	}
	if !isBase64(data) {
		ve.Add("data", "not valid base64")
	}
	if err := ve.Err(); err != nil {
		return ContentBlock{}, err
	}
	return newBlock(map[string]any{"type": typ, "data": data, "mimeType": mimeType})
}

// ResourceLink returns a resource_link block; uri and name must not be empty.
func ResourceLink(uri, name string, extra LinkOptions) (ContentBlock, error) {
	var ve ValidationError
	if uri == "" {
		ve.Add("uri", "must not be empty")
	}
	if name == "" {
		ve.Add("name", "must not be empty")
	}
	if err := ve.Err(); err != nil {
		return ContentBlock{}, err
	}
	obj := map[string]any{"type": TypeResourceLink, "uri": uri, "name": name}
	if extra.Title != "" {
		obj["title"] = extra.Title
	}
	if extra.Description != "" {
		obj["description"] = extra.Description
	}
	if extra.MimeType != "" {
		obj["mimeType"] = extra.MimeType
	}
	if extra.Size != nil {
		obj["size"] = json.Number(strconv.FormatInt(*extra.Size, 10))
	}
	if extra.Icons != nil {
		icons := make([]any, len(extra.Icons))
		for i, ic := range extra.Icons {
			icons[i] = ic.toJSON()
		}
		obj["icons"] = icons
	}
	return newBlock(obj)
}

// EmbeddedResource returns a resource block embedding res, which needs a
// non-empty URI and exactly one of Text and Blob.
func EmbeddedResource(res ResourceContents) (ContentBlock, error) {
	if res.URI == "" {
		return ContentBlock{}, &ValidationError{Errors: []FieldError{{Field: "resource.uri", Detail: "must not be empty"}}}
	}
	r := map[string]any{"uri": res.URI}
	if res.MimeType != "" {
		r["mimeType"] = res.MimeType
	}
	if res.Text != nil {
		r["text"] = *res.Text
	}
	if res.Blob != nil {
		r["blob"] = *res.Blob
	}
	return newBlock(map[string]any{"type": TypeResource, "resource": r})
}

// EmbeddedText returns a resource block embedding a text resource.
func EmbeddedText(uri, mimeType, text string) (ContentBlock, error) {
	return EmbeddedResource(ResourceContents{URI: uri, MimeType: mimeType, Text: &text})
}

// EmbeddedBlob returns a resource block embedding a binary resource given as
// standard padded base64.
func EmbeddedBlob(uri, mimeType, base64Data string) (ContentBlock, error) {
	return EmbeddedResource(ResourceContents{URI: uri, MimeType: mimeType, Blob: &base64Data})
}

// EntityCard returns a card for a Drupal entity: a resource_link whose uri is
// "entity:<entityType>/<id>" and name "<entityType>/<id>", carrying
// _meta["drupal.org/ai.entity"] = {entity_type, id, uuid, view_mode}. A
// block-unaware consumer sees a plain link; an entity-aware renderer shows the
// entity in viewMode ("" means DefaultViewMode). entityType is a machine name
// (lowercase letters, digits, underscores), id must not be empty, and uuid
// must be a UUID; it is written in its canonical lowercase form.
func EntityCard(entityType, id, uuid, viewMode string) (ContentBlock, error) {
	return EntityCardWith(EntityRef{EntityType: entityType, ID: id, UUID: uuid, ViewMode: viewMode}, LinkOptions{})
}

// EntityCardWith is EntityCard with the optional resource_link fields, such
// as the entity's label as Title.
func EntityCardWith(ref EntityRef, extra LinkOptions) (ContentBlock, error) {
	var ve ValidationError
	if !isMachineName(ref.EntityType) {
		ve.Add("entity_type", "must be a machine name: lowercase letters, digits and underscores")
	}
	if ref.ID == "" {
		ve.Add("id", "must not be empty")
	}
	u, err := uuid.Parse(ref.UUID)
	if err != nil {
		ve.Add("uuid", "must be a UUID")
	}
	if ref.ViewMode == "" {
		ref.ViewMode = DefaultViewMode
	}
	if err := ve.Err(); err != nil {
		return ContentBlock{}, err
	}
	name := ref.EntityType + "/" + ref.ID
	b, err := ResourceLink("entity:"+ref.EntityType+"/"+url.PathEscape(ref.ID), name, extra)
	if err != nil {
		return ContentBlock{}, err
	}
	return b.WithMeta(MetaEntity, map[string]any{
		"entity_type": ref.EntityType,
		"id":          ref.ID,
		"uuid":        u.String(),
		"view_mode":   ref.ViewMode,
	})
}

func isMachineName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// MustBlock returns b, panicking when err is not nil. It is for blocks built
// from constants, such as a processor's fixed examples.
func MustBlock(b ContentBlock, err error) ContentBlock {
	if err != nil {
		panic(fmt.Sprintf("blocks: %v", err))
	}
	return b
}
