package filetype_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"chatd/internal/filetype"
)

var (
	png  = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...)
	pdf  = []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\n")
	html = []byte("<!DOCTYPE html><html><script>alert(1)</script></html>")
	svg  = []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
	wav  = append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), make([]byte, 32)...)
	mp3  = append([]byte("ID3\x03\x00\x00\x00\x00\x00\x00"), make([]byte, 64)...)
	text = []byte("hello, world\n")
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		declared string
		data     []byte
		want     string
		wantErr  bool
	}{
		{"undeclared png", "", png, "image/png", false},
		{"generic png", "application/octet-stream", png, "image/png", false},
		{"declared png", "image/png", png, "image/png", false},
		{"html as png", "image/png", html, "", true},
		{"text as png", "image/png", text, "", true},
		{"html as text", "text/plain", html, "text/plain", false},
		{"png as text", "text/plain", png, "", true},
		{"html declared", "text/html", html, "text/html", false},
		{"svg declared", "image/svg+xml", svg, "image/svg+xml", false},
		{"pdf declared", "application/pdf", pdf, "application/pdf", false},
		{"undeclared pdf", "", pdf, "application/pdf", false},
		{"html as pdf", "application/pdf", html, "", true},
		{"wav alias", "audio/x-wav", wav, "audio/x-wav", false},
		{"mp3", "audio/mpeg", mp3, "audio/mpeg", false},
		{"markdown", "text/markdown", text, "text/markdown", false},
		{"json", "application/json", []byte(`{"a":1}`), "application/json", false},
		{"charset kept", "text/plain; charset=utf-8", text, "text/plain; charset=utf-8", false},
		{"bad type", "not a type;;", text, "", true},
		{"empty file", "", nil, "text/plain; charset=utf-8", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := filetype.Resolve(tt.declared, tt.data)
			if tt.wantErr {
				assert.ErrorIs(t, err, filetype.ErrContradicted)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestInline(t *testing.T) {
	for typ, want := range map[string]bool{
		"image/png": true, "image/jpeg": true, "audio/mpeg": true, "video/mp4": true, "application/pdf": true,
		"image/svg+xml": false, "text/html": false, "text/plain": false, "application/octet-stream": false,
		"IMAGE/PNG; x=y": true,
	} {
		assert.Equal(t, want, filetype.Inline(typ), typ)
	}
}

func TestSniffKnowsMoreThanDetectContentType(t *testing.T) {
	// FLAC has no signature in net/http's table.
	flac := append([]byte("fLaC\x00\x00\x00\x22"), bytes.Repeat([]byte{0}, 64)...)
	assert.Equal(t, "audio/flac", filetype.Sniff(flac))
}

func FuzzResolve(f *testing.F) {
	for _, seed := range [][]byte{png, pdf, html, svg, wav, mp3, text} {
		f.Add("image/png", seed)
		f.Add("", seed)
	}
	f.Fuzz(func(t *testing.T, declared string, data []byte) {
		got, err := filetype.Resolve(declared, data)
		if err == nil && got == "" {
			t.Fatalf("Resolve(%q) gave no type and no error", declared)
		}
		// A type served inline is one the bytes show.
		if err == nil && filetype.Inline(got) && !filetype.Inline(filetype.Sniff(data)) {
			t.Fatalf("Resolve(%q) = %q, served inline, for bytes sniffed as %q", declared, got, filetype.Sniff(data))
		}
	})
}

// TestResolveReadsOnlyTheStart checks what an upload relies on to judge a
// file before the rest of it arrives: bytes past SniffLen change nothing,
// whatever they are.
func TestResolveReadsOnlyTheStart(t *testing.T) {
	long := func(start []byte, fill byte) []byte {
		return append(bytes.Clone(start), bytes.Repeat([]byte{fill}, 3*filetype.SniffLen)...)
	}
	for _, data := range [][]byte{long(png, 0), long(pdf, 0xff), long(text, 'a'), long(text, 0), long(html, ' '), long(wav, 1)} {
		for _, declared := range []string{"", "image/png", "text/plain", "application/pdf", "audio/wav"} {
			whole, wholeErr := filetype.Resolve(declared, data)
			start, startErr := filetype.Resolve(declared, data[:filetype.SniffLen])
			assert.Equal(t, whole, start, "declared %q, %q…", declared, data[:8])
			assert.Equal(t, wholeErr, startErr, "declared %q, %q…", declared, data[:8])
		}
		assert.Equal(t, filetype.Sniff(data), filetype.Sniff(data[:filetype.SniffLen]))
	}
}
