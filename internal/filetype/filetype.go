// Package filetype decides what an uploaded file is from its bytes: its type
// when the client names none, and whether the type a client names is one
// its bytes contradict. It also says how a type may be shown: served inline
// (raster images, audio, video, PDF) or only as an attachment (everything
// else, SVG and HTML included, which can carry script).
//
// Sniffing is net/http.DetectContentType (the WHATWG algorithm browsers use)
// and, for what it does not know (m4a, flac, Office documents, …), the
// signatures of github.com/gabriel-vasile/mimetype.
package filetype

import (
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// ErrContradicted: the declared type is not what the bytes are (an HTML page
// declared image/png).
var ErrContradicted = errors.New("the file's bytes are not of its declared type")

// Generic is the type of bytes nothing more is known of.
const Generic = "application/octet-stream"

// SniffLen is how many of a file's first bytes Sniff and Resolve read: the
// rest cannot change their answer, so a file can be judged before the rest
// of it arrives. (It is the most either sniffer reads.)
const SniffLen = 4096

// Sniff returns the type data's bytes show, without parameters except a
// text type's charset; Generic when they show none.
func Sniff(data []byte) string {
	data = data[:min(len(data), SniffLen)]
	t := http.DetectContentType(data)
	if base(t) == Generic || base(t) == "application/zip" || base(t) == "text/plain" {
		if m := mimetype.Detect(data); base(m.String()) != "text/plain" && m.String() != Generic {
			return m.String()
		}
	}
	return t
}

// Resolve returns the type to store data as, given the type its client
// declared ("" or Generic: none). Undeclared, it is the sniffed type. A
// declared type is kept unless the bytes contradict it (ErrContradicted):
// a type served inline must be confirmed by the bytes' signature, and bytes
// of a type served inline, or HTML, must be declared as that (or, for
// HTML, as the plain text it also is).
func Resolve(declared string, data []byte) (string, error) {
	data = data[:min(len(data), SniffLen)]
	sniffed := Sniff(data)
	d := strings.ToLower(strings.TrimSpace(declared))
	if d != "" {
		parsed, params, err := mime.ParseMediaType(d)
		if err != nil {
			return "", ErrContradicted
		}
		d = mime.FormatMediaType(parsed, params)
		if d == "" {
			return "", ErrContradicted
		}
	}
	if d == "" || base(d) == Generic {
		return sniffed, nil
	}
	if matches(base(d), sniffed, data) {
		return d, nil
	}
	if Inline(d) || Inline(sniffed) || base(sniffed) == "text/html" {
		return "", ErrContradicted
	}
	return d, nil
}

// matches reports whether data, sniffed as sniffed, is of type want.
func matches(want, sniffed string, data []byte) bool {
	if base(sniffed) == want {
		return true
	}
	for m := mimetype.Detect(data); m != nil; m = m.Parent() {
		if m.Is(want) {
			return true
		}
	}
	return false
}

// Inline reports whether a file of type t may be shown in the browser:
// raster images, audio, video and PDF. Anything else is served as an
// attachment.
func Inline(t string) bool {
	b := base(t)
	switch {
	case b == "application/pdf", strings.HasPrefix(b, "audio/"), strings.HasPrefix(b, "video/"):
		return true
	case strings.HasPrefix(b, "image/"):
		return b != "image/svg+xml"
	}
	return false
}

// IsImage reports whether t is a raster image type (what a model takes as
// an image).
func IsImage(t string) bool {
	return strings.HasPrefix(base(t), "image/") && base(t) != "image/svg+xml"
}

// IsText reports whether t is text a model can read as such: text/*, JSON,
// XML and the like.
func IsText(t string) bool {
	b := base(t)
	return strings.HasPrefix(b, "text/") || b == "application/json" || b == "application/xml" ||
		strings.HasSuffix(b, "+json") || strings.HasSuffix(b, "+xml") || b == "application/javascript" ||
		b == "application/x-yaml" || b == "application/yaml"
}

// AudioFormat is the input_audio format of an audio type a model takes
// ("wav" or "mp3"), or "" for any other.
func AudioFormat(t string) string {
	switch base(t) {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return "wav"
	case "audio/mpeg", "audio/mp3", "audio/x-mpeg", "audio/x-mp3":
		return "mp3"
	}
	return ""
}

// base is t's media type without parameters, lowercase.
func base(t string) string {
	b, _, _ := strings.Cut(t, ";")
	return strings.ToLower(strings.TrimSpace(b))
}

// Base returns t's media type without its parameters, lowercase.
func Base(t string) string { return base(t) }
