package elicit

import (
	"net/netip"
	"strings"
	"time"
)

// The format checks run on every answer, so they scan the string once with
// a byte table instead of building a parsed value (net/mail, net/url and
// time.Parse allocate and accept far more than a form field should hold).

// checkFormat returns why s does not match format f, or "".
func checkFormat(f stringFormat, s string) string {
	switch f {
	case formatEmail:
		if !isEmail(s) {
			return "must be an email address"
		}
	case formatURI:
		if !isAbsoluteURI(s) {
			return "must be an absolute URI with a scheme"
		}
	case formatDate:
		if !isDate(s) {
			return "must be a calendar date formatted YYYY-MM-DD"
		}
	case formatDateTime:
		// time.Parse recognises the RFC 3339 layout and takes a fast path
		// that does not allocate, about as quick as the scanners above; a
		// scanner of our own would only add a second definition of RFC 3339
		// to keep in step with the one the rest of chatd uses.
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "must be an RFC 3339 date-time with a time zone offset"
		}
	}
	return ""
}

// Character classes of the email and URI grammars, as bits of charClass.
const (
	classAtext      = 1 << iota // RFC 5322 atext, ASCII only
	classAlnum                  // ALPHA / DIGIT
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
	set(alpha+digit, classAtext|classAlnum|classUnreserved|classURIText|classScheme)
	set("!#$%&'*+-/=?^_`{|}~", classAtext)
	set("-._~", classUnreserved|classURIText)
	set("!$&'()*+,;=", classSubDelim|classURIText)
	// The gen-delims but "#", which ends the path and query and may not
	// appear in a fragment. "[" and "]" are meant for IP literals only, but
	// browsers leave them unescaped in queries (a[]=1), so they pass.
	set(":/?[]@", classURIText)
	set("+-.", classScheme)
	return t
}()

// Email limits from RFC 5321 §4.5.3.1: a local part of 64 octets, a domain
// of 255 (253 as text, without the root's trailing dot), a path of 256
// including the angle brackets.
const (
	maxEmailLen  = 254
	maxLocalLen  = 64
	maxDomainLen = 253
	maxLabelLen  = 63
)

// isEmail reports whether s is a bare addr-spec local@domain, as an HTML
// email input produces it: no display name, comment, angle brackets or
// spaces, and ASCII only, as JSON Schema's "email" format (its
// internationalised twin, "idn-email", is not one MCP allows).
//
// The local part is an RFC 5322 dot-atom: atext characters (letters,
// digits and !#$%&'*+-/=?^_`{|}~) in dot-separated runs, no dot leading,
// trailing or doubled. A quoted local part is refused: net/mail unquoted
// it, so such an address never matched itself and was refused before too.
//
// The domain is a host name — dot-separated labels of letters, digits and
// hyphens, 1 to 63 characters each, not beginning or ending with a hyphen,
// 253 characters in all — or an IP address in brackets, [192.0.2.1] or
// [2001:db8::1], the literals net/mail accepted (no "IPv6:" tag, no zone).
// The local part is at most 64 characters and the address at most 254.
func isEmail(s string) bool {
	if len(s) > maxEmailLen {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 || at > maxLocalLen {
		return false
	}
	if !isDotAtom(s[:at]) {
		return false
	}
	domain := s[at+1:]
	if len(domain) > 0 && domain[0] == '[' {
		return isAddressLiteral(domain)
	}
	return isHostName(domain)
}

// isDotAtom reports whether s is an RFC 5322 dot-atom of ASCII atext.
func isDotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			if s[i-1] == '.' {
				return false
			}
			continue
		}
		if charClass[c]&classAtext == 0 {
			return false
		}
	}
	return true
}

// isHostName reports whether s is a DNS host name in the preferred syntax
// of RFC 1123: letter-digit-hyphen labels.
func isHostName(s string) bool {
	if s == "" || len(s) > maxDomainLen {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if charClass[c]&classAlnum == 0 && c != '-' {
				return false
			}
			continue
		}
		n := i - start
		if n == 0 || n > maxLabelLen || s[start] == '-' || s[i-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// isAddressLiteral reports whether s is "[" IP "]" with an address
// net.ParseIP accepts: IPv4 dotted decimal or IPv6, without a zone.
func isAddressLiteral(s string) bool {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return false
	}
	ip := s[1 : len(s)-1]
	if strings.IndexByte(ip, '%') >= 0 {
		return false
	}
	_, err := netip.ParseAddr(ip)
	return err == nil
}

// isAbsoluteURI reports whether s is an RFC 3986 URI: a scheme, ":", then
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
func isAbsoluteURI(s string) bool {
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

// isDate reports whether s is a calendar date written YYYY-MM-DD, years 0000
// to 9999 of the proleptic Gregorian calendar: exactly what
// time.Parse(time.DateOnly, s) accepts.
func isDate(s string) bool {
	if len(s) != len("2006-01-02") || s[4] != '-' || s[7] != '-' {
		return false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	return ok1 && ok2 && ok3 && 1 <= m && m <= 12 && 1 <= d && d <= daysIn(m, y)
}

// digits returns the decimal value of s and whether it is all ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// daysIn returns the number of days in month m (1–12) of year y.
func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
