// Package render turns chat messages and their content blocks into HTML that
// is safe to put into any page: everything a message carries is escaped by
// html/template, links keep only the schemes of an allow-list (http, https,
// mailto, and entity: through a configured URL template), and data: URLs
// appear only as the source of image and audio blocks of allowed MIME types.
// No content, however crafted, can make the output run script.
package render

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"mime"
	"net/url"
	"regexp"
	"strings"

	"chatd/internal/blocks"
)

//go:embed templates/*.html
var templateFS embed.FS

var templates = template.Must(template.New("").ParseFS(templateFS, "templates/*.html"))

// DefaultImageTypes and DefaultAudioTypes are the MIME types an image or
// audio block may be shown with. SVG is left out on purpose: it is a
// document that can carry script, not a picture.
var (
	DefaultImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"}
	DefaultAudioTypes = []string{"audio/mpeg", "audio/ogg", "audio/wav", "audio/x-wav", "audio/webm",
		"audio/mp4", "audio/aac", "audio/flac"}
)

// Options configure a Renderer.
type Options struct {
	// EntityURLTemplate turns entity:<type>/<id> links into web links, such
	// as https://site.example/{type}/{id} or
	// https://site.example/view?type={type}&id={id}; {type} and {id} are
	// replaced, each escaped for where it lands (see EntityURL). Empty:
	// entity links are shown as plain text.
	EntityURLTemplate string
	// ImageTypes and AudioTypes replace DefaultImageTypes and
	// DefaultAudioTypes when not nil.
	ImageTypes, AudioTypes []string
}

// Renderer renders messages as HTML. It is safe for concurrent use.
type Renderer struct {
	entityURL string
	images    map[string]bool
	audio     map[string]bool
}

// New returns a Renderer. The entity URL template must be an absolute http
// or https URL.
func New(o Options) (*Renderer, error) {
	r := &Renderer{
		entityURL: o.EntityURLTemplate,
		images:    set(o.ImageTypes, DefaultImageTypes),
		audio:     set(o.AudioTypes, DefaultAudioTypes),
	}
	if err := CheckEntityURLTemplate(o.EntityURLTemplate); err != nil {
		return nil, err
	}
	return r, nil
}

// CheckEntityURLTemplate reports whether t is usable as an entity URL
// template: empty, or an absolute http(s) URL once {type} and {id} are
// filled in, with {id} in it and neither in its scheme or host (where no
// escape keeps a value from choosing the site).
func CheckEntityURLTemplate(t string) error {
	if t == "" {
		return nil
	}
	u, err := url.Parse(strings.NewReplacer("{type}", "node", "{id}", "1").Replace(t))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("entity URL template %q: want an absolute http or https URL such as https://site.example/{type}/{id}", t)
	}
	if !strings.Contains(t, "{id}") {
		return fmt.Errorf("entity URL template %q: must contain {id}", t)
	}
	_, afterScheme, _ := strings.Cut(t, "://")
	authority := afterScheme[:strings.IndexAny(afterScheme+"/", "/?#")]
	if strings.Contains(t[:len(t)-len(afterScheme)]+authority, "{") {
		return fmt.Errorf("entity URL template %q: {type} and {id} belong in the path or the query, not the scheme or host", t)
	}
	return nil
}

// EntityURL fills template with the type and id of uri, entity:<type>/<id>
// split at the first "/", and reports false when uri names no entity or
// one that must not be linked: a type or id that is empty, "." or "..",
// or holds "/", "?", "#", "&", a space or a control character. The values
// are taken as written, never percent-decoded, so "%2e%2e" is six
// characters and not "..". Each is escaped for where it lands: in the
// query or fragment (after the template's first "?" or "#") with
// url.QueryEscape, in the path with url.PathEscape. internal/ui's page
// links entities by the same rules, so both show the same URL.
func EntityURL(template, uri string) (string, bool) {
	typ, id, ok := parseEntityURI(uri)
	if !ok || template == "" || !linkableEntityPart(typ) || !linkableEntityPart(id) {
		return "", false
	}
	query := len(template)
	if i := strings.IndexAny(template, "?#"); i >= 0 {
		query = i
	}
	var b strings.Builder
	last := 0
	for _, m := range entityPlaceholder.FindAllStringSubmatchIndex(template, -1) {
		value := id
		if template[m[2]:m[3]] == "type" {
			value = typ
		}
		escape := url.PathEscape
		if m[0] >= query {
			escape = url.QueryEscape
		}
		b.WriteString(template[last:m[0]])
		b.WriteString(escape(value))
		last = m[1]
	}
	b.WriteString(template[last:])
	return b.String(), true
}

// entityPlaceholder matches {type} and {id} in an entity URL template.
var entityPlaceholder = regexp.MustCompile(`\{(type|id)\}`)

// linkableEntityPart reports whether an entity's type or id, as written,
// may be put in a link: none of it can step out of its place in the URL.
func linkableEntityPart(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c == 0x7f || strings.ContainsRune("/?#&", c) {
			return false
		}
	}
	return true
}

func set(list, def []string) map[string]bool {
	if list == nil {
		list = def
	}
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[strings.ToLower(s)] = true
	}
	return m
}

// Message renders one message: its text as paragraphs, its blocks, and the
// citations and suggested replies of its _meta.
func (r *Renderer) Message(m blocks.Message) (string, error) {
	v := messageView{
		Role:       "unknown",
		Paragraphs: paragraphs(m.Text),
		Blocks:     r.blockViews(m.ContentBlocks),
		Citations:  r.citations(m.Meta[blocks.MetaCitations]),
		Suggested:  suggestedReplies(m.Meta[blocks.MetaSuggestedReplies]),
	}
	if m.Role == blocks.RoleUser || m.Role == blocks.RoleAssistant {
		v.Role = string(m.Role)
	}
	return r.execute("message", v)
}

// Blocks renders content blocks alone.
func (r *Renderer) Blocks(list []blocks.ContentBlock) (string, error) {
	return r.execute("blocks", r.blockViews(list))
}

func (r *Renderer) execute(name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	return buf.String(), nil
}

type messageView struct {
	Role       string
	Paragraphs [][]string
	Blocks     []blockView
	Citations  []citationView
	Suggested  []string
}

// blockView is one block as the templates see it. Only fields the block's
// kind uses are set.
type blockView struct {
	Kind        string // text, image, audio, link, entity, resource, unknown
	Paragraphs  [][]string
	Src         template.URL // a data: URL built here from checked parts
	MimeType    string
	Href        string // a URL that passed the allow-list
	Label       string
	URI         string
	Description string
	Text        string
	Detail      string
	Entity      blocks.EntityRef
}

func (r *Renderer) blockViews(list []blocks.ContentBlock) []blockView {
	out := make([]blockView, 0, len(list))
	for _, b := range list {
		out = append(out, r.blockView(b))
	}
	return out
}

func (r *Renderer) blockView(b blocks.ContentBlock) blockView {
	switch b.Type() {
	case blocks.TypeText:
		return blockView{Kind: "text", Paragraphs: paragraphs(b.Text())}
	case blocks.TypeImage, blocks.TypeAudio:
		return r.mediaView(b)
	case blocks.TypeResourceLink:
		v := blockView{Kind: "link", URI: b.URI(), Label: firstNonEmpty(b.Title(), b.Name(), b.URI()),
			Description: b.Description(), MimeType: b.MimeType()}
		v.Href, _ = r.LinkURL(b.URI())
		if ref, ok := entityRef(b); ok {
			v.Kind, v.Entity = "entity", ref
		}
		return v
	case blocks.TypeResource:
		res, _ := b.Resource()
		v := blockView{Kind: "resource", URI: res.URI, Label: res.URI, MimeType: res.MimeType}
		v.Href, _ = r.LinkURL(res.URI)
		if res.Text != nil {
			v.Text = *res.Text
		} else if res.Blob != nil {
			// An embedded blob is never shown inline: only image and audio
			// blocks may become data: URLs.
			v.Detail = fmt.Sprintf("binary, %d bytes", len(*res.Blob)*3/4-strings.Count(*res.Blob, "="))
		}
		return v
	}
	return blockView{Kind: "unknown", Label: b.Type()}
}

func (r *Renderer) mediaView(b blocks.ContentBlock) blockView {
	allowed, kind := r.images, "image"
	if b.Type() == blocks.TypeAudio {
		allowed, kind = r.audio, "audio"
	}
	v := blockView{Kind: kind, MimeType: b.MimeType(), Label: kind + " (" + b.MimeType() + ")"}
	mt, _, err := mime.ParseMediaType(b.MimeType())
	if err != nil || !allowed[mt] || !isBase64(b.Data()) {
		v.Kind = "media-refused"
		return v
	}
	// Both parts are checked: a media type from the allow-list and plain
	// base64, so the URL cannot be anything but this picture or sound.
	v.Src = template.URL("data:" + mt + ";base64," + b.Data())
	return v
}

// isBase64 reports whether s holds only the standard base64 alphabet (the
// blocks package has already checked it decodes).
func isBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// entityRef returns the entity a resource_link names: from its
// drupal.org/ai.entity _meta, or else from an entity:<type>/<id> URI.
func entityRef(b blocks.ContentBlock) (blocks.EntityRef, bool) {
	if ref, ok := b.Entity(); ok {
		return ref, true
	}
	typ, id, ok := parseEntityURI(b.URI())
	return blocks.EntityRef{EntityType: typ, ID: id}, ok
}

// parseEntityURI splits entity:<type>/<id> at the first "/".
func parseEntityURI(uri string) (typ, id string, ok bool) {
	rest, found := strings.CutPrefix(uri, "entity:")
	if !found {
		return "", "", false
	}
	typ, id, found = strings.Cut(rest, "/")
	return typ, id, found && typ != "" && id != ""
}

// ErrRefused is why LinkURL refuses a URI.
var ErrRefused = errors.New("render: URL scheme not allowed")

// LinkURL returns the URL a link to uri may point at: uri itself for http,
// https and mailto; for entity:<type>/<id>, the entity URL template filled
// in (see EntityURL); otherwise ErrRefused, and the link is shown as plain
// text.
func (r *Renderer) LinkURL(uri string) (string, error) {
	if strings.HasPrefix(uri, "entity:") {
		// Before url.Parse, which refuses what the page's parser accepts
		// (a stray "%"): an entity link is judged by EntityURL alone.
		if link, ok := EntityURL(r.entityURL, uri); ok {
			return link, nil
		}
		return "", ErrRefused
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", ErrRefused
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return "", ErrRefused
		}
		return uri, nil
	case "mailto":
		return uri, nil
	}
	return "", ErrRefused
}

type citationView struct {
	Title, Href, Snippet string
}

// citations reads drupal.org/ai.citations: [{uri, title, snippet?}]. A
// malformed value shows nothing rather than failing the message.
func (r *Renderer) citations(v any) []citationView {
	var list []struct {
		URI     string `json:"uri"`
		Title   string `json:"title"`
		Snippet string `json:"snippet"`
	}
	if !decodeMeta(v, &list) {
		return nil
	}
	out := make([]citationView, 0, len(list))
	for _, c := range list {
		cv := citationView{Title: firstNonEmpty(c.Title, c.URI), Snippet: c.Snippet}
		cv.Href, _ = r.LinkURL(c.URI)
		out = append(out, cv)
	}
	return out
}

// suggestedReplies reads drupal.org/ai.suggested_replies: strings, or
// {label, message} objects whose label is shown.
func suggestedReplies(v any) []string {
	var list []json.RawMessage
	if !decodeMeta(v, &list) {
		return nil
	}
	var out []string
	for _, item := range list {
		var s string
		var obj struct {
			Label   string `json:"label"`
			Message string `json:"message"`
		}
		if json.Unmarshal(item, &s) == nil && s != "" {
			out = append(out, s)
		} else if json.Unmarshal(item, &obj) == nil && firstNonEmpty(obj.Label, obj.Message) != "" {
			out = append(out, firstNonEmpty(obj.Label, obj.Message))
		}
	}
	return out
}

// decodeMeta decodes a _meta value into a typed one. Values arrive as
// decoded JSON from history and as Go values from a live turn, so they go
// through JSON once either way.
func decodeMeta(v, into any) bool {
	if v == nil {
		return false
	}
	data, err := json.Marshal(v)
	return err == nil && json.Unmarshal(data, into) == nil
}

// paragraphs splits text at blank lines into paragraphs of lines.
func paragraphs(text string) [][]string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out [][]string
	for _, p := range strings.Split(text, "\n\n") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		out = append(out, strings.Split(strings.Trim(p, "\n"), "\n"))
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
