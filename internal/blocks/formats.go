package blocks

import (
	"net/netip"
	"strings"
	"time"
)

// Formats of string fields that MCP's schema constrains: URIs (resource_link
// and resource uri, icon src; elicitation answers of format "uri") and RFC
// 3339 date-times (annotations.lastModified; answers of format
// "date-time"). They are checked on every block and answer, so the URI is
// scanned once with a byte table rather than parsed into a value.

// Character classes of the URI grammar, as bits of uriClass.
const (
	classAlnum      = 1 << iota // ALPHA / DIGIT
	classUnreserved             // RFC 3986 unreserved
	classSubDelim               // RFC 3986 sub-delims
	classURIText                // what a path, query or fragment may hold unescaped
	classScheme                 // RFC 3986 scheme characters after the first
)

var charClass = func() (t [256]uint8) {
	set := func(chars string, bits uint8) {
		for i := range len(chars) {
			t[chars[i]] |= bits
		}
	}
	const (
		alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		digit = "0123456789"
	)
	set(alpha+digit, classAlnum|classUnreserved|classURIText|classScheme)
	set("-._~", classUnreserved|classURIText)
	set("!$&'()*+,;=", classSubDelim|classURIText)
	// The gen-delims but "#", which ends the path and query and may not
	// appear in a fragment. "[" and "]" are meant for IP literals only, but
	// browsers leave them unescaped in queries (a[]=1), so they pass.
	set(":/?[]@", classURIText)
	set("+-.", classScheme)
	return t
}()

// IsDateTime reports whether s is an RFC 3339 date-time with a time zone
// offset. The "T" and "Z" may be lowercase, as RFC 3339 §5.6 allows
// (time.Parse accepts only the capitals).
func IsDateTime(s string) bool {
	if len(s) > len("2006-01-02T") && (s[10] == 't' || s[len(s)-1] == 'z') {
		b := []byte(s)
		if b[10] == 't' {
			b[10] = 'T'
		}
		if b[len(b)-1] == 'z' {
			b[len(b)-1] = 'Z'
		}
		s = string(b)
	}
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

// IsURI reports whether s is an RFC 3986 URI: a scheme, ":", then
// the hierarchical part, an optional "?query" and an optional "#fragment"
// (JSON Schema's "uri" allows the fragment that RFC 3986's absolute-URI
// leaves out).
//
// The scheme is a letter followed by letters, digits, "+", "-" and ".".
// Everything after it is ASCII: unreserved characters, reserved ones and
// "%" with two hex digits; no spaces, controls, non-ASCII text (an IRI must
// be percent-encoded first), or any of `"<>\^{|}. "#" appears at most once,
// to start the fragment. An authority ("//" after the scheme) is checked
// as RFC 3986 defines it: an optional userinfo "@" (unreserved,
// sub-delims, ":" and escapes), then a host — a registered name of
// unreserved characters and sub-delims, or an IPv6 address in brackets
// without a zone — then an optional ":" and decimal port. Two things are
// stricter than RFC 3986, as net/url is: a host name may percent-encode
// only non-ASCII bytes, and a bracketed host must be an IPv6 address (no
// IPvFuture, no bare IPv4). "[" and "]" are tolerated outside the host.
func IsURI(s string) bool {
	colon := schemeEnd(s)
	if colon < 0 {
		return false
	}
	rest := s[colon+1:]
	if len(rest) >= 2 && rest[0] == '/' && rest[1] == '/' {
		rest = rest[2:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if !isAuthority(rest[:end]) {
			return false
		}
		rest = rest[end:]
	}
	fragment := false
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case charClass[c]&classURIText != 0:
		case c == '%':
			if !isEscape(rest, i) {
				return false
			}
			i += 2
		case c == '#' && !fragment:
			fragment = true
		default:
			return false
		}
	}
	return true
}

// schemeEnd returns the index of the ":" ending the scheme s begins with,
// or -1 if s does not begin with one.
func schemeEnd(s string) int {
	if s == "" || charClass[s[0]]&classAlnum == 0 || s[0] <= '9' {
		return -1 // a scheme begins with a letter
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == ':':
			return i
		case charClass[c]&classScheme == 0:
			return -1
		}
	}
	return -1
}

// isEscape reports whether s[i:] begins with "%" and two hex digits.
func isEscape(s string, i int) bool {
	return i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isAuthority reports whether a is an RFC 3986 authority, the text between
// "//" and the path: [userinfo "@"] host [":" port].
func isAuthority(a string) bool {
	if at := strings.IndexByte(a, '@'); at >= 0 {
		for i := 0; i < at; i++ {
			switch c := a[i]; {
			case charClass[c]&(classUnreserved|classSubDelim) != 0 || c == ':':
			case c == '%' && isEscape(a[:at], i):
				i += 2
			default:
				return false
			}
		}
		a = a[at+1:]
	}
	var port string
	if len(a) > 0 && a[0] == '[' {
		end := strings.IndexByte(a, ']')
		if end < 0 || !isIPv6Literal(a[1:end]) {
			return false
		}
		if port = a[end+1:]; port != "" && port[0] != ':' {
			return false
		}
	} else {
		host := a
		if colon := strings.IndexByte(a, ':'); colon >= 0 {
			host, port = a[:colon], a[colon:]
		}
		for i := 0; i < len(host); i++ {
			switch c := host[i]; {
			case charClass[c]&(classUnreserved|classSubDelim) != 0:
			case c == '%' && isEscape(host, i) && host[i+1] >= '8':
				// RFC 3986 §3.2.2 wants escapes in a name only for
				// non-ASCII bytes, and net/url refuses the others.
				i += 2
			default:
				return false
			}
		}
	}
	if port == "" {
		return true
	}
	for i := 1; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

// isIPv6Literal reports whether s, the text between the brackets of an
// RFC 3986 IP-literal, is an IPv6 address, as net/url requires (an
// IPv4-mapped one included).
func isIPv6Literal(s string) bool {
	if strings.IndexByte(s, '%') >= 0 {
		return false // a zone (RFC 6874); not RFC 3986
	}
	ip, err := netip.ParseAddr(s)
	return err == nil && !ip.Is4()
}
