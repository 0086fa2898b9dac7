package elicit

import (
	"net/mail"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"chatd/internal/blocks"

	"github.com/stretchr/testify/assert"
)

// The checks the format scanners replaced, kept as the reference the tables
// and FuzzFormats compare against: every difference from them is listed.

func netMailEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

func netURLAbsolute(s string) bool {
	if strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}

func timeParseDate(s string) bool {
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// formatCase is one input with the scanner's answer and the answer of the
// check it replaced; the two differ only where the language was tightened.
type formatCase struct {
	in     string
	want   bool
	before bool
}

func runFormatCases(t *testing.T, check, reference func(string) bool, cases []formatCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, tc.want, check(tc.in), "scanner")
			assert.Equal(t, tc.before, reference(tc.in), "replaced check")
		})
	}
}

func TestIsEmail(t *testing.T) {
	local64 := strings.Repeat("a", 64)
	label63 := strings.Repeat("b", 63)
	domain252 := strings.Repeat(label63+".", 3) + strings.Repeat("c", 60) // the longest beside a one-letter local part
	runFormatCases(t, isEmail, netMailEmail, []formatCase{
		// Accepted by both.
		{in: "a@b.c", want: true, before: true},
		{in: "ada@example.com", want: true, before: true},
		{in: "first.last@example.com", want: true, before: true},
		{in: "user+tag@mail.example.co.uk", want: true, before: true},
		{in: "UPPER@EXAMPLE.COM", want: true, before: true},
		{in: "!#$%&'*+-/=?^_`{|}~@example.com", want: true, before: true},
		{in: "x@localhost", want: true, before: true},
		{in: "x@a-b.example", want: true, before: true},
		{in: "x@xn--bcher-kva.example", want: true, before: true},
		{in: "x@123.example", want: true, before: true},
		{in: "x@[192.0.2.1]", want: true, before: true},
		{in: "x@[2001:db8::1]", want: true, before: true},
		{in: "x@[::ffff:192.0.2.1]", want: true, before: true},
		{in: local64 + "@example.com", want: true, before: true},
		{in: "x@" + label63 + ".example", want: true, before: true},
		{in: "x@" + domain252, want: true, before: true},
		// Refused by both.
		{in: "", want: false, before: false},
		{in: "ann.example.com", want: false, before: false},
		{in: "@example.com", want: false, before: false},
		{in: "ann@", want: false, before: false},
		{in: ".ann@example.com", want: false, before: false},
		{in: "ann.@example.com", want: false, before: false},
		{in: "an..n@example.com", want: false, before: false},
		{in: "ann@.example.com", want: false, before: false},
		{in: "ann@example.com.", want: false, before: false},
		{in: "ann@example..com", want: false, before: false},
		{in: "ann@b@example.com", want: false, before: false},
		{in: "Ann <ann@example.com>", want: false, before: false},
		{in: "<ann@example.com>", want: false, before: false},
		{in: " ann@example.com", want: false, before: false},
		{in: "ann@example.com ", want: false, before: false},
		{in: "an n@example.com", want: false, before: false},
		{in: "ann(x)@example.com", want: false, before: false},
		{in: "ann@example.com (Ann)", want: false, before: false},
		{in: `"ann"@example.com`, want: false, before: false}, // net/mail unquoted it, so it never matched itself
		{in: `"a b"@example.com`, want: false, before: false},
		{in: "ann@[192.0.2.1", want: false, before: false},
		{in: "ann@[300.0.2.1]", want: false, before: false},
		{in: "ann@[IPv6:2001:db8::1]", want: false, before: false},
		{in: "ann@[fe80::1%eth0]", want: false, before: false},
		{in: "ann@[example.com]", want: false, before: false},
		// Refused now, accepted before: non-ASCII, domains that are not
		// host names, and the RFC 5321 lengths.
		{in: "josé@example.com", want: false, before: true},
		{in: "ann@münchen.example", want: false, before: true},
		{in: "ann@exam_ple.com", want: false, before: true},
		{in: "ann@exa!mple.com", want: false, before: true},
		{in: "ann@-example.com", want: false, before: true},
		{in: "ann@example-.com", want: false, before: true},
		{in: "a" + local64 + "@example.com", want: false, before: true},
		{in: "x@b" + label63 + ".example", want: false, before: true},
		{in: "x@c" + domain252, want: false, before: true},
		{in: local64 + "@" + strings.Repeat(label63+".", 2) + strings.Repeat("c", 62), want: false, before: true}, // 255 in all
	})
}

func TestIsAbsoluteURI(t *testing.T) {
	runFormatCases(t, blocks.IsURI, netURLAbsolute, []formatCase{
		// Accepted by both.
		{in: "https://example.com/ada", want: true, before: true},
		{in: "HTTPS://EXAMPLE.COM", want: true, before: true},
		{in: "urn:isbn:0451450523", want: true, before: true},
		{in: "mailto:ann@example.com", want: true, before: true},
		{in: "tel:+1-201-555-0123", want: true, before: true},
		{in: "git+ssh://git@example.com/repo.git", want: true, before: true},
		{in: "file:///etc/hosts", want: true, before: true},
		{in: "a:", want: true, before: true},
		{in: "x://", want: true, before: true},
		{in: "x://:80", want: true, before: true},
		{in: "https://example.com/search?q=go&lang=en#top", want: true, before: true},
		{in: "https://example.com/a/b;v=1,2/(c)*!$'", want: true, before: true},
		{in: "https://example.com#", want: true, before: true},
		{in: "https://example.com/p#a/b?c", want: true, before: true},
		{in: "https://user:p%40ss@example.com:8443/p", want: true, before: true},
		{in: "http://[2001:db8::1]:80/", want: true, before: true},
		{in: "http://[::ffff:192.0.2.1]/", want: true, before: true},
		{in: "https://example.com/caf%C3%A9", want: true, before: true},
		{in: "http://%C3%A9.example/", want: true, before: true},
		{in: "https://example.com/?a[]=1", want: true, before: true},
		{in: "https://example.com/%41", want: true, before: true},
		// Refused by both.
		{in: "", want: false, before: false},
		{in: "example.com/page", want: false, before: false},
		{in: "//example.com/page", want: false, before: false},
		{in: "/page", want: false, before: false},
		{in: ":page", want: false, before: false},
		{in: "1http://example.com", want: false, before: false},
		{in: "ht_tp://example.com", want: false, before: false},
		{in: "https://example.com/a b", want: false, before: false},
		{in: "https://example.com/a\tb", want: false, before: false},
		{in: "https://example.com/\x7f", want: false, before: false},
		{in: "https://example.com/\x00", want: false, before: false},
		{in: "https://example.com/%zz", want: false, before: false},
		{in: "https://example.com/%4", want: false, before: false},
		{in: "https://example.com:port/", want: false, before: false},
		{in: "https://example.com:80:80/", want: false, before: false},
		{in: "http://[zz]/", want: false, before: false},
		{in: "http://[192.0.2.1]/", want: false, before: false},
		{in: "http://[2001:db8::1/", want: false, before: false},
		{in: "http://[2001:db8::1]x/", want: false, before: false},
		{in: "http://%41/", want: false, before: false},
		{in: "http://exa`mple.com/", want: false, before: false},
		// Refused now, accepted before: text RFC 3986 does not allow.
		{in: "https://example.com/Köln", want: false, before: true},
		{in: "https://example.com/{id}", want: false, before: true},
		{in: "https://example.com/a|b", want: false, before: true},
		{in: `https://example.com/a\b`, want: false, before: true},
		{in: `https://example.com/"q"`, want: false, before: true},
		{in: "https://example.com/<p>", want: false, before: true},
		{in: "https://example.com/a^b", want: false, before: true},
		{in: "https://example.com/a`b", want: false, before: true},
		{in: "https://example.com/#a#b", want: false, before: true},
		{in: "https://example.com/#a\x00b", want: false, before: true},
		{in: "https://example.com/?q=%zz", want: false, before: true},
		{in: "urn:a%zz", want: false, before: true},
		{in: "http://a@b@example.com/", want: false, before: true},
		{in: "http://[fe80::1%25en0]/", want: false, before: true},
		{in: "foo://a:1:2/", want: false, before: true},
		{in: "http://a%25b/", want: false, before: true},
		{in: "http://a<b/", want: false, before: true},
		{in: "http://a]b/", want: false, before: true},
	})
}

func TestIsDate(t *testing.T) {
	// No difference from time.Parse(time.DateOnly, ...).
	runFormatCases(t, isDate, timeParseDate, []formatCase{
		{in: "2025-11-25", want: true, before: true},
		{in: "2024-02-29", want: true, before: true},
		{in: "2000-02-29", want: true, before: true},
		{in: "0000-02-29", want: true, before: true}, // year 0 is a leap year
		{in: "0000-01-01", want: true, before: true},
		{in: "9999-12-31", want: true, before: true},
		{in: "2025-04-30", want: true, before: true},
		{in: "2025-01-31", want: true, before: true},
		{in: "1900-02-29", want: false, before: false},
		{in: "2025-02-29", want: false, before: false},
		{in: "2025-02-30", want: false, before: false},
		{in: "2025-04-31", want: false, before: false},
		{in: "2025-01-32", want: false, before: false},
		{in: "2025-13-01", want: false, before: false},
		{in: "2025-00-10", want: false, before: false},
		{in: "2025-01-00", want: false, before: false},
		{in: "2025-2-3", want: false, before: false},
		{in: "25-02-03", want: false, before: false},
		{in: "10000-01-01", want: false, before: false},
		{in: "+025-02-03", want: false, before: false},
		{in: "-025-02-03", want: false, before: false},
		{in: "2025/02/03", want: false, before: false},
		{in: "2025-1a-03", want: false, before: false},
		{in: "2025-01- 3", want: false, before: false},
		{in: " 2025-02-03", want: false, before: false},
		{in: "2025-02-03 ", want: false, before: false},
		{in: "2025-02-03T00:00:00Z", want: false, before: false},
		{in: "２０２５-02-03", want: false, before: false},
		{in: "", want: false, before: false},
	})
}

func TestCheckFormatDetails(t *testing.T) {
	tests := []struct {
		format stringFormat
		in     string
		want   string
	}{
		{format: formatEmail, in: "ann@example.com", want: ""},
		{format: formatEmail, in: "ann", want: "must be an email address"},
		{format: formatURI, in: "https://example.com", want: ""},
		{format: formatURI, in: "example.com", want: "must be an absolute URI with a scheme"},
		{format: formatDate, in: "2024-02-29", want: ""},
		{format: formatDate, in: "2025-02-29", want: "must be a calendar date formatted YYYY-MM-DD"},
		{format: formatDateTime, in: "2025-06-18T10:00:00+02:00", want: ""},
		{format: formatDateTime, in: "2025-06-18T10:00:00", want: "must be an RFC 3339 date-time with a time zone offset"},
		{format: formatNone, in: "anything", want: ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, checkFormat(tt.format, tt.in), "%d %q", tt.format, tt.in)
	}
}

// FuzzFormats compares the scanners with the checks they replaced.
// Properties: a date is accepted exactly when time.Parse accepted it; an
// email or URI the scanner accepts was accepted before (the languages only
// shrank); and one accepted before but refused now has a reason listed in
// emailTightening or uriTightening.
func FuzzFormats(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		if got, old := isDate(s), timeParseDate(s); got != old {
			t.Fatalf("isDate(%q) = %v, time.Parse accepts: %v", s, got, old)
		}
		if got, old := isEmail(s), netMailEmail(s); got && !old {
			t.Fatalf("isEmail(%q) accepts what net/mail refused", s)
		} else if !got && old && emailTightening(s) == "" {
			t.Fatalf("isEmail(%q) refuses what net/mail accepted, for no listed reason", s)
		}
		if got, old := blocks.IsURI(s), netURLAbsolute(s); got && !old {
			t.Fatalf("blocks.IsURI(%q) accepts what net/url refused", s)
		} else if !got && old && uriTightening(s) == "" {
			t.Fatalf("blocks.IsURI(%q) refuses what net/url accepted, for no listed reason", s)
		}
	})
}

// emailTightening returns which documented restriction, beyond what
// net/mail enforced, s breaks, or "". It is written independently of the
// scanner, from the rules in isEmail's doc comment.
func emailTightening(s string) string {
	if !isASCII(s) {
		return "not ASCII"
	}
	if len(s) > maxEmailLen {
		return "address over 254"
	}
	at := strings.LastIndex(s, "@")
	local, domain := s[:at], s[at+1:]
	if len(local) > maxLocalLen {
		return "local part over 64"
	}
	if strings.HasPrefix(domain, "[") {
		return ""
	}
	if len(domain) > maxDomainLen {
		return "domain over 253"
	}
	for _, label := range strings.Split(domain, ".") {
		if len(label) > maxLabelLen {
			return "label over 63"
		}
		if strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return "label begins or ends with a hyphen"
		}
		if strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" {
			return "label not letters, digits and hyphens"
		}
	}
	return ""
}

// uriTightening returns which documented restriction, beyond what net/url
// enforced, s breaks, or "". It is written independently of the scanner,
// from the rules in blocks.IsURI's doc comment.
func uriTightening(s string) string {
	if !isASCII(s) {
		return "not ASCII"
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "control character" // net/url checked for them only before the "#"
	}
	if strings.ContainsAny(s, "\"<>\\^`{|}") {
		return "character RFC 3986 never allows"
	}
	if strings.Count(s, "#") > 1 {
		return "second #"
	}
	for t := s; strings.Contains(t, "%"); {
		i := strings.Index(t, "%")
		if i+2 >= len(t) || !strings.ContainsRune(hexChars, rune(t[i+1])) || !strings.ContainsRune(hexChars, rune(t[i+2])) {
			return "malformed escape" // net/url left queries and opaque parts unchecked
		}
		t = t[i+3:]
	}
	_, rest, _ := strings.Cut(s, ":")
	after, ok := strings.CutPrefix(rest, "//")
	if !ok {
		return ""
	}
	authority, _, _ := strings.Cut(strings.Split(strings.Split(after, "?")[0], "#")[0], "/")
	if strings.Count(authority, "@") > 1 {
		return "@ in userinfo"
	}
	if strings.Contains(authority, "%25") {
		return "%25 in host (an IPv6 zone, or a name net/url let through)"
	}
	hostport := authority[strings.LastIndex(authority, "@")+1:]
	if strings.HasPrefix(hostport, "[") {
		return ""
	}
	if strings.Contains(hostport, "]") {
		return "] in host name"
	}
	if strings.Count(hostport, ":") > 1 {
		return "colon in host name"
	}
	return ""
}

const hexChars = "0123456789abcdefABCDEF"

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// BenchmarkFormats times each scanner against the check it replaced, on the
// values the ten-field benchmark submits.
func BenchmarkFormats(b *testing.B) {
	benches := []struct {
		name  string
		in    string
		check func(string) bool
	}{
		{name: "email/scan", in: "ada@example.com", check: isEmail},
		{name: "email/net-mail", in: "ada@example.com", check: netMailEmail},
		{name: "uri/scan", in: "https://example.com/ada", check: blocks.IsURI},
		{name: "uri/net-url", in: "https://example.com/ada", check: netURLAbsolute},
		{name: "date/scan", in: "2025-11-25", check: isDate},
		{name: "date/time-parse", in: "2025-11-25", check: timeParseDate},
		{name: "date-time/utc", in: "2025-06-18T10:00:00.250Z", check: func(s string) bool { return checkFormat(formatDateTime, s) == "" }},
		{name: "date-time/offset", in: "2025-06-18T10:00:00+02:00", check: func(s string) bool { return checkFormat(formatDateTime, s) == "" }},
	}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			if !bb.check(bb.in) {
				b.Fatalf("%q refused", bb.in)
			}
			b.ReportAllocs()
			for b.Loop() {
				if !bb.check(bb.in) {
					b.Fatal("refused")
				}
			}
		})
	}
}
