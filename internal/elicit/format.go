package elicit

import (
	"net/netip"
	"strings"

	"chatd/internal/blocks"
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
		if !blocks.IsURI(s) {
			return "must be an absolute URI with a scheme"
		}
	case formatDate:
		if !isDate(s) {
			return "must be a calendar date formatted YYYY-MM-DD"
		}
	case formatDateTime:
		// One definition of RFC 3339 for all of chatd, lowercase t and z
		// included.
		if !blocks.IsDateTime(s) {
			return "must be an RFC 3339 date-time with a time zone offset"
		}
	}
	return ""
}

// Character classes of the email grammar, as bits of charClass (URIs are
// checked by blocks.IsURI).
const (
	classAtext = 1 << iota // RFC 5322 atext, ASCII only
	classAlnum             // ALPHA / DIGIT
)

var charClass = func() (t [256]uint8) {
	set := func(chars string, bits uint8) {
		for i := range len(chars) {
			t[chars[i]] |= bits
		}
	}
	set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", classAtext|classAlnum)
	set("!#$%&'*+-/=?^_`{|}~", classAtext)
	return t
}()

// Email limits, the size limits of RFC 5321: a local part of 64 octets, a
// domain of 255 (253 as text, without the root's trailing dot), a path of
// 256 including the angle brackets.
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
