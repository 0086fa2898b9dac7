package render

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"chatd/internal/blocks"
)

const testEntityURL = "https://site.example/{type}/{id}"

func newTestRenderer(tb testing.TB) *Renderer {
	tb.Helper()
	r, err := New(Options{EntityURLTemplate: testEntityURL})
	require.NoError(tb, err)
	return r
}

func TestLinkURL(t *testing.T) {
	r := newTestRenderer(t)
	plain, err := New(Options{})
	require.NoError(t, err)
	tests := []struct {
		uri, want string
		r         *Renderer
	}{
		{uri: "https://example.com/a?b=c", want: "https://example.com/a?b=c"},
		{uri: "http://example.com", want: "http://example.com"},
		{uri: "HTTPS://example.com", want: "HTTPS://example.com"},
		{uri: "mailto:ana@example.com", want: "mailto:ana@example.com"},
		{uri: "entity:node/42", want: "https://site.example/node/42"},
		{uri: "entity:node/a b/../c"}, // more in testdata/entity_links.json
		{uri: "entity:node/42", r: plain},
		{uri: "entity:node"},
		{uri: "javascript:alert(1)"},
		{uri: "JavaScript:alert(1)"},
		{uri: "java\nscript:alert(1)"},
		{uri: " javascript:alert(1)"},
		{uri: "vbscript:x"},
		{uri: "data:text/html;base64,PHNjcmlwdD4="},
		{uri: "data:image/png;base64,iVBO"},
		{uri: "file:///etc/passwd"},
		{uri: "https:///nohost"},
		{uri: "//example.com/x"},
		{uri: "rel/path"},
		{uri: ""},
	}
	for _, tt := range tests {
		rr := tt.r
		if rr == nil {
			rr = r
		}
		got, err := rr.LinkURL(tt.uri)
		if tt.want == "" {
			assert.ErrorIs(t, err, ErrRefused, tt.uri)
			continue
		}
		assert.NoError(t, err, tt.uri)
		assert.Equal(t, tt.want, got, tt.uri)
	}
}

func TestNewRejectsBadTemplate(t *testing.T) {
	for _, tmpl := range []string{"javascript:{type}/{id}", "/relative/{type}/{id}", "https://site.example/{type}", "data:text/html,{id}"} {
		_, err := New(Options{EntityURLTemplate: tmpl})
		assert.Error(t, err, tmpl)
	}
}

func mustMessage(tb testing.TB, role blocks.Role, text, blocksJSON string, meta map[string]any) blocks.Message {
	tb.Helper()
	var list []blocks.ContentBlock
	if blocksJSON != "" {
		var err error
		list, err = blocks.DecodeList([]byte(blocksJSON), "content_blocks")
		require.NoError(tb, err)
	}
	return blocks.Message{ID: blocks.NewID(), Role: role, Text: text, Timestamp: blocks.Now(), ContentBlocks: list, Meta: meta}
}

const pngData = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

func TestMessage(t *testing.T) {
	r := newTestRenderer(t)
	tests := []struct {
		name     string
		msg      blocks.Message
		contains []string
		absent   []string
	}{
		{
			name:     "text is escaped and keeps its lines",
			msg:      mustMessage(t, blocks.RoleUser, "a <b>\nc & d\n\nnext", "", nil),
			contains: []string{`<div class="chatd-message chatd-user"><p>a &lt;b&gt;<br>c &amp; d</p><p>next</p>`},
		},
		{
			name: "entity card links through the template",
			msg: mustMessage(t, blocks.RoleAssistant, "", `[{"type":"resource_link","uri":"entity:node/42","name":"node/42","title":"Getting started",
				"_meta":{"drupal.org/ai.entity":{"entity_type":"node","id":"42","uuid":"3f2c8a4e-7b1d-4c6e-9a0f-5d8e2b7c1a94","view_mode":"teaser"}}}]`, nil),
			contains: []string{`<article class="chatd-block chatd-entity">`, `href="https://site.example/node/42"`, `>Getting started</a>`, `node 42 · teaser`},
		},
		{
			name:     "png is a data: image",
			msg:      mustMessage(t, blocks.RoleAssistant, "", `[{"type":"image","data":"`+pngData+`","mimeType":"image/png"}]`, nil),
			contains: []string{`<img src="data:image/png;base64,` + pngData + `"`},
		},
		{
			name:     "svg is not shown",
			msg:      mustMessage(t, blocks.RoleAssistant, "", `[{"type":"image","data":"PHN2Zz4=","mimeType":"image/svg+xml"}]`, nil),
			contains: []string{`[image (image/svg&#43;xml) not shown]`},
			absent:   []string{"<img", "data:"},
		},
		{
			name:     "audio",
			msg:      mustMessage(t, blocks.RoleAssistant, "", `[{"type":"audio","data":"AAAA","mimeType":"audio/ogg"}]`, nil),
			contains: []string{`<audio controls src="data:audio/ogg;base64,AAAA">`},
		},
		{
			name:     "javascript link is plain text",
			msg:      mustMessage(t, blocks.RoleAssistant, "", `[{"type":"resource_link","uri":"javascript:alert(1)","name":"x"}]`, nil),
			contains: []string{`x <span class="chatd-uri">javascript:alert(1)</span>`},
			absent:   []string{"href"},
		},
		{
			name:     "embedded text resource",
			msg:      mustMessage(t, blocks.RoleAssistant, "", `[{"type":"resource","resource":{"uri":"https://example.com/a.txt","mimeType":"text/plain","text":"<hi>"}}]`, nil),
			contains: []string{`<a href="https://example.com/a.txt"`, `<pre>&lt;hi&gt;</pre>`},
		},
		{
			name:     "embedded blob is described, not shown",
			msg:      mustMessage(t, blocks.RoleAssistant, "", `[{"type":"resource","resource":{"uri":"https://example.com/a.png","mimeType":"image/png","blob":"`+pngData+`"}}]`, nil),
			contains: []string{`(image/png): binary, 70 bytes`},
			absent:   []string{"<img"},
		},
		{
			name: "citations and suggested replies",
			msg: mustMessage(t, blocks.RoleAssistant, "see [1]", "", map[string]any{
				blocks.MetaCitations:        []any{map[string]any{"uri": "https://example.com/", "title": "Example", "snippet": "quoted"}},
				blocks.MetaSuggestedReplies: []string{"More", "Help"},
			}),
			contains: []string{`<ol class="chatd-sources"><li><a href="https://example.com/" rel="noopener noreferrer nofollow">Example</a> <q>quoted</q></li></ol>`,
				`<ul class="chatd-suggested-replies"><li>More</li><li>Help</li></ul>`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Message(tt.msg)
			require.NoError(t, err)
			for _, s := range tt.contains {
				assert.Contains(t, got, s)
			}
			for _, s := range tt.absent {
				assert.NotContains(t, got, s)
			}
			assertSafe(t, got)
		})
	}
}

// corpusEntry is one entry of testdata/xss.json: a turn as a client would
// post it.
type corpusEntry struct {
	Name          string          `json:"name"`
	Message       string          `json:"message"`
	ContentBlocks json.RawMessage `json:"content_blocks"`
	Meta          map[string]any  `json:"_meta"`
}

func loadCorpus(tb testing.TB) []corpusEntry {
	tb.Helper()
	data, err := os.ReadFile("testdata/xss.json")
	require.NoError(tb, err)
	var corpus []corpusEntry
	require.NoError(tb, json.Unmarshal(data, &corpus))
	return corpus
}

// messageJSON is the entry as a stored message record.
func (e corpusEntry) messageJSON(tb testing.TB) []byte {
	tb.Helper()
	m := map[string]any{"id": blocks.NewID(), "role": "assistant", "message": e.Message, "timestamp": "2026-11-30T12:00:00.000Z"}
	if len(e.ContentBlocks) > 0 {
		m["content_blocks"] = e.ContentBlocks
	}
	if e.Meta != nil {
		m["_meta"] = e.Meta
	}
	data, err := json.Marshal(m)
	require.NoError(tb, err)
	return data
}

func TestXSSCorpus(t *testing.T) {
	r := newTestRenderer(t)
	for _, e := range loadCorpus(t) {
		t.Run(e.Name, func(t *testing.T) {
			var m blocks.Message
			if err := json.Unmarshal(e.messageJSON(t), &m); err != nil {
				// Refused at the door: chatd never stores it.
				t.Skipf("not a valid message: %v", err)
			}
			got, err := r.Message(m)
			require.NoError(t, err)
			assertSafe(t, got)
		})
	}
}

// FuzzMessage renders any message chatd could store and checks the HTML
// against the allow-lists. Seeds: testdata/xss.json.
func FuzzMessage(f *testing.F) {
	for _, e := range loadCorpus(f) {
		f.Add(e.messageJSON(f))
	}
	r := newTestRenderer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m blocks.Message
		if json.Unmarshal(data, &m) != nil {
			return
		}
		got, err := r.Message(m)
		require.NoError(t, err)
		assertSafe(t, got)
	})
}

// allowedAttrs lists, per element the renderer may emit, the attributes it
// may carry.
var allowedAttrs = map[string]map[string]bool{
	"div": {"class": true}, "p": {"class": true}, "br": {}, "span": {"class": true},
	"a":      {"href": true, "rel": true},
	"img":    {"src": true, "alt": true},
	"audio":  {"controls": true, "src": true},
	"figure": {"class": true}, "figcaption": {}, "pre": {},
	"article": {"class": true}, "header": {}, "strong": {}, "small": {},
	"ol": {"class": true}, "ul": {"class": true}, "li": {}, "q": {},
}

// assertSafe parses rendered HTML the way a browser tokenizes it and fails
// on any element, attribute or URL outside the renderer's allow-lists.
func assertSafe(tb testing.TB, s string) {
	tb.Helper()
	assertSafeWith(tb, s, allowedAttrs)
}

// assertSafeWith is assertSafe with its own allow-list of elements.
func assertSafeWith(tb testing.TB, s string, allowedAttrs map[string]map[string]bool) {
	tb.Helper()
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			tok := z.Token()
			attrs, ok := allowedAttrs[tok.Data]
			if !ok {
				tb.Fatalf("element <%s> in %s", tok.Data, s)
			}
			for _, a := range tok.Attr {
				if !attrs[a.Key] {
					tb.Fatalf("attribute %s on <%s> in %s", a.Key, tok.Data, s)
				}
				switch a.Key {
				case "href":
					if !hasPrefixFold(a.Val, "http://", "https://", "mailto:") {
						tb.Fatalf("href %q in %s", a.Val, s)
					}
				case "src":
					if !safeDataURL(a.Val) {
						tb.Fatalf("src %q in %s", a.Val, s)
					}
				}
			}
		}
	}
}

func hasPrefixFold(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

func safeDataURL(s string) bool {
	mt, data, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ";base64,")
	if !ok || !strings.HasPrefix(s, "data:") || !isBase64(data) {
		return false
	}
	for _, allowed := range append(DefaultImageTypes, DefaultAudioTypes...) {
		if mt == allowed {
			return true
		}
	}
	return false
}

// entityLinkCorpus is testdata/entity_links.json: where entity: links point
// under each template, "" for plain text. internal/ui's browser test holds
// the page to the same file.
type entityLinkCorpus struct {
	Templates map[string]string   `json:"templates"`
	Cases     []map[string]string `json:"cases"`
}

// TestEntityLinks: entity:<type>/<id> links fill the template with each
// value escaped for where it lands, and values that could step out of
// their place are shown as plain text.
func TestEntityLinks(t *testing.T) {
	data, err := os.ReadFile("testdata/entity_links.json")
	require.NoError(t, err)
	var corpus entityLinkCorpus
	require.NoError(t, json.Unmarshal(data, &corpus))
	require.NotEmpty(t, corpus.Cases)
	for name, template := range corpus.Templates {
		r, err := New(Options{EntityURLTemplate: template})
		require.NoError(t, err, name)
		for _, c := range corpus.Cases {
			want, ok := c[name]
			require.True(t, ok, "%q has no %s link", c["uri"], name)
			got, err := r.LinkURL(c["uri"])
			if want == "" {
				assert.ErrorIs(t, err, ErrRefused, "%s: %q → %q", name, c["uri"], got)
				continue
			}
			require.NoError(t, err, "%s: %q", name, c["uri"])
			assert.Equal(t, want, got, "%s: %q", name, c["uri"])
		}
	}
}

func TestCheckEntityURLTemplate(t *testing.T) {
	for _, ok := range []string{"", "https://site.example/{type}/{id}", "https://site.example/view?type={type}&id={id}",
		"http://site.example:8080/e/{id}#{type}", "https://site.example?id={id}"} {
		assert.NoError(t, CheckEntityURLTemplate(ok), ok)
	}
	for _, bad := range []string{"site.example/{id}", "javascript:{id}", "https://site.example/{type}",
		"https://{type}.site.example/{id}", "https://site.example{id}/", "https://u:{id}@site.example/", "{type}://site.example/{id}"} {
		assert.Error(t, CheckEntityURLTemplate(bad), bad)
	}
}

// FuzzEntityURL: whatever an entity: URI holds, its link stays on the
// template's site, in the template's place: the same scheme, host and query
// parameters, and no path segment that climbs. Seeds: the URIs of
// testdata/entity_links.json.
func FuzzEntityURL(f *testing.F) {
	data, err := os.ReadFile("testdata/entity_links.json")
	require.NoError(f, err)
	var corpus entityLinkCorpus
	require.NoError(f, json.Unmarshal(data, &corpus))
	for _, c := range corpus.Cases {
		f.Add(c["uri"])
	}
	templates := make(map[string]*url.URL, len(corpus.Templates))
	for _, tmpl := range corpus.Templates {
		u, err := url.Parse(strings.NewReplacer("{type}", "t", "{id}", "i").Replace(tmpl))
		require.NoError(f, err)
		templates[tmpl] = u
	}
	f.Fuzz(func(t *testing.T, uri string) {
		for tmpl, want := range templates {
			link, ok := EntityURL(tmpl, uri)
			if !ok {
				continue
			}
			got, err := url.Parse(link)
			require.NoError(t, err, "%q → %q", uri, link)
			assert.Equal(t, want.Scheme, got.Scheme, link)
			assert.Equal(t, want.Host, got.Host, link)
			assert.Empty(t, got.Fragment, link)
			assert.Equal(t, len(strings.Split(want.EscapedPath(), "/")), len(strings.Split(got.EscapedPath(), "/")), link)
			for _, seg := range strings.Split(got.EscapedPath(), "/") {
				assert.NotContains(t, []string{".", ".."}, seg, link)
			}
			query := got.Query()
			assert.Len(t, query, len(want.Query()), link)
			for key := range want.Query() {
				assert.Len(t, query[key], 1, link)
			}
		}
	})
}
