// Package ui serves chatd's chat page: plain HTML, CSS and JavaScript
// embedded in the binary, no build step and nothing loaded from elsewhere.
// The page talks to the /v1 API like any other frontend.
package ui

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"time"
)

//go:embed static
var static embed.FS

// Options configure the page.
type Options struct {
	// EntityURLTemplate is where entity cards link to
	// (https://site.example/{type}/{id}); empty shows them unlinked.
	EntityURLTemplate string
}

// contentSecurityPolicy allows the page its own script, style and API,
// data: images and sounds, and blob: ones (the thread's files, which the
// page fetches with its key), and nothing else: no inline script, no plugins,
// no frames. It backs up the page's own rule of never turning message
// content into markup.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"media-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Page serves the chat page and its assets.
type Page struct {
	index   []byte
	assets  fs.FS
	files   http.Handler
	paths   []string
	started time.Time
}

// New builds the page.
func New(o Options) (*Page, error) {
	tmpl, err := template.ParseFS(static, "static/index.html")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, o); err != nil {
		return nil, err
	}
	assets, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	p := &Page{index: buf.Bytes(), assets: assets, started: time.Now(), paths: []string{"/"}}
	p.files = http.StripPrefix("/ui/", http.FileServerFS(assets))
	entries, err := fs.ReadDir(assets, ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() && e.Name() != "index.html" {
			p.paths = append(p.paths, "/ui/"+e.Name())
		}
	}
	return p, nil
}

// Paths lists every path the page serves with GET: / and its assets, for
// the router; anything else is not the page's.
func (p *Page) Paths() []string { return p.paths }

// ServeHTTP serves one of Paths.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	// The page is small and changes with the binary: always revalidate.
	h.Set("Cache-Control", "no-cache")
	if r.URL.Path == "/" {
		http.ServeContent(w, r, "index.html", p.started, bytes.NewReader(p.index))
		return
	}
	p.files.ServeHTTP(w, r)
}
