package api

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"chatd/internal/filetype"
)

// FuzzReadUpload feeds arbitrary uploads, multipart and raw, to the upload
// parser: it must never panic, must refuse with a client error (4xx), and
// what it accepts must be one file within the limit, whose name and type
// the upload's checks then take or refuse without a server error.
func FuzzReadUpload(f *testing.F) {
	const boundary = "b0undary"
	multi := "multipart/form-data; boundary=" + boundary
	part := func(name, filename, ct, data string) string {
		h := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\""
		if filename != "" {
			h += "; filename=\"" + filename + "\""
		}
		if ct != "" {
			h += "\r\nContent-Type: " + ct
		}
		return h + "\r\n\r\n" + data + "\r\n"
	}
	end := "--" + boundary + "--\r\n"
	for _, seed := range []struct{ contentType, name, body string }{
		{multi, "", part("file", "a.png", "image/png", "\x89PNG\r\n\x1a\n") + end},
		{multi, "", part("other", "", "", "x") + part("file", "a.txt", "", "hello") + end},
		{multi, "", part("file", "a", "", "a") + part("file", "b", "", "b") + end},
		{multi, "", part("file", "a.png", "image/png", "\x89PNG")},               // truncated
		{multi, "", "--" + boundary + "\r\nX-Pad: " + strings.Repeat("h", 5000)}, // a huge header
		{multi, "", part("other", "", "", "x") + end},                            // no file part
		{multi, "", ""},
		{"multipart/form-data", "", "x"},
		{"multipart/form-data; boundary=\"", "", "x"},
		{"image/png", "a.png", "\x89PNG\r\n\x1a\n"},
		{"text/plain", "", "no name"},
		{"", "a\x00b", "x"},
		{"text/html", "../../etc/passwd", "<html>"},
	} {
		f.Add(seed.contentType, seed.name, []byte(seed.body))
	}
	const maxFile = 4096
	f.Fuzz(func(t *testing.T, contentType, name string, body []byte) {
		target := "/v1/threads/t/files"
		if name != "" {
			target += "?name=" + url.QueryEscape(name)
		}
		r := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(body))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		up, err := readUpload(httptest.NewRecorder(), r, maxFile)
		if err != nil {
			if p := problemFor(err); p.Status < 400 || p.Status >= 500 {
				t.Fatalf("Content-Type %q, body %q: status %d (%v), want a client error", contentType, body, p.Status, err)
			}
			return
		}
		size := len(up.data)
		if up.rest != nil {
			// A raw body of known length: its first bytes, enough to judge
			// its type; the rest arrive as the file is stored.
			if len(up.data) > filetype.SniffLen {
				t.Fatalf("read %d bytes ahead, more than %d", len(up.data), filetype.SniffLen)
			}
			rest, err := io.ReadAll(up.rest)
			if err != nil {
				t.Fatalf("the rest of %q: %v", body, err)
			}
			if size += len(rest); int64(size) != up.size {
				t.Fatalf("%d bytes arrived of %d", size, up.size)
			}
		}
		if size > maxFile {
			t.Fatalf("accepted %d bytes, more than %d", size, maxFile)
		}
		if clean, err := cleanFileName(up.name); err == nil && (clean == "" || strings.ContainsAny(clean, "/\\")) {
			t.Fatalf("name %q kept as %q", up.name, clean)
		} else if err != nil && problemFor(err).Status != http.StatusBadRequest {
			t.Fatalf("name %q: %v", up.name, err)
		}
		if typ, err := filetype.Resolve(up.declared, up.data); err == nil && typ == "" {
			t.Fatalf("no type for %q", up.declared)
		}
	})
}
