package blocks

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// parseJSON decodes exactly one JSON value (surrounding whitespace allowed)
// into the tree encoding/json's Decoder would produce with UseNumber:
// map[string]any, []any, string, json.Number, bool and nil. It exists because
// blocks are decoded on every history read: it validates and builds in a
// single pass, where encoding/json scans a value twice and needs a Decoder
// for UseNumber. It follows encoding/json exactly (FuzzParseMatchesStdlib
// checks): the last of duplicate keys wins, invalid UTF-8 and lone surrogates
// become U+FFFD, nesting is limited to maxDepth.
func parseJSON(data []byte) (any, error) {
	p := parser{data: data}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.errorf("data after the value")
	}
	return v, nil
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type parser struct {
	data  []byte
	pos   int
	depth int
	// exact, when set, refuses what a decode would not keep exactly (see
	// CheckExact) and tracks where the parser is for the error's path.
	exact *exactness
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) unexpected(context string) error {
	if p.pos >= len(p.data) {
		if len(p.data) == 0 {
			return fmt.Errorf("invalid JSON: no value")
		}
		return fmt.Errorf("invalid JSON: unexpected end of input")
	}
	return p.errorf("invalid character %s %s", quoteChar(p.data[p.pos]), context)
}

// quoteChar formats c the way encoding/json's syntax errors do.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.unexpected("")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.string()
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.unexpected("looking for beginning of value")
}

func (p *parser) literal(word string) error {
	for i := 0; i < len(word); i++ {
		if p.pos >= len(p.data) || p.data[p.pos] != word[i] {
			return p.unexpected("in literal " + word)
		}
		p.pos++
	}
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("nesting deeper than %d", maxDepth)
	}
	if p.exact != nil && p.depth > MaxDepth {
		return p.exact.fail(fmt.Sprintf("nests deeper than %d levels", MaxDepth))
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	m := make(map[string]any)
	if p.exact != nil {
		p.exact.path = append(p.exact.path, "")
		defer func() { p.exact.path = p.exact.path[:len(p.exact.path)-1] }()
	}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return m, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.unexpected("looking for beginning of object key string")
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.unexpected("after object key")
		}
		p.pos++
		p.skipSpace()
		if p.exact != nil {
			p.exact.path[len(p.exact.path)-1] = keySegment(key.(string))
			if _, dup := m[key.(string)]; dup {
				return nil, p.exact.fail("appears more than once in its object; only one value could be kept")
			}
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[key.(string)] = v
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.unexpected("")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			p.depth--
			return m, nil
		default:
			return nil, p.unexpected("after object key:value pair")
		}
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	a := []any{}
	if p.exact != nil {
		p.exact.path = append(p.exact.path, "")
		defer func() { p.exact.path = p.exact.path[:len(p.exact.path)-1] }()
	}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return a, nil
	}
	for {
		if p.exact != nil {
			p.exact.path[len(p.exact.path)-1] = "[" + strconv.Itoa(len(a)) + "]"
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.unexpected("")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			p.depth--
			return a, nil
		default:
			return nil, p.unexpected("after array element")
		}
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (p *parser) number() (any, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.pos < len(p.data) && isDigit(p.data[p.pos]):
		for p.pos < len(p.data) && isDigit(p.data[p.pos]) {
			p.pos++
		}
	default:
		return nil, p.unexpected("in numeric literal")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if p.pos >= len(p.data) || !isDigit(p.data[p.pos]) {
			return nil, p.unexpected("after decimal point in numeric literal")
		}
		for p.pos < len(p.data) && isDigit(p.data[p.pos]) {
			p.pos++
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if p.pos >= len(p.data) || !isDigit(p.data[p.pos]) {
			return nil, p.unexpected("in exponent of numeric literal")
		}
		for p.pos < len(p.data) && isDigit(p.data[p.pos]) {
			p.pos++
		}
	}
	return json.Number(p.data[start:p.pos]), nil
}

// string parses a string starting at the opening quote. It returns any so
// value can return it without another conversion.
func (p *parser) string() (any, error) {
	p.pos++ // '"'
	start := p.pos
	// Fast path: plain ASCII without escapes, the common case.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		p.pos++
	}
	buf := make([]byte, 0, p.pos-start+16)
	buf = append(buf, p.data[start:p.pos]...)
	for {
		if p.pos >= len(p.data) {
			return nil, p.unexpected("")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return nil, p.unexpected("in string literal")
		case c == '\\':
			var err error
			if buf, err = p.escape(buf); err != nil {
				return nil, err
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				if p.exact != nil {
					return nil, p.exact.fail("holds a byte that is not UTF-8")
				}
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, p.data[p.pos:p.pos+size]...)
			}
			p.pos += size
		}
	}
}

// escape decodes the escape sequence at p.pos into buf.
func (p *parser) escape(buf []byte) ([]byte, error) {
	p.pos++ // '\\'
	if p.pos >= len(p.data) {
		return nil, p.unexpected("")
	}
	c := p.data[p.pos]
	switch c {
	case '"', '\\', '/':
		p.pos++
		return append(buf, c), nil
	case 'b':
		p.pos++
		return append(buf, '\b'), nil
	case 'f':
		p.pos++
		return append(buf, '\f'), nil
	case 'n':
		p.pos++
		return append(buf, '\n'), nil
	case 'r':
		p.pos++
		return append(buf, '\r'), nil
	case 't':
		p.pos++
		return append(buf, '\t'), nil
	case 'u':
		p.pos++
		r, err := p.hex4()
		if err != nil {
			return nil, err
		}
		if utf16.IsSurrogate(r) {
			// A pair only when a valid low surrogate escape follows;
			// otherwise this one is U+FFFD and the next is read on its own.
			if p.pos+6 <= len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
				if r2, ok := parseHex4(p.data[p.pos+2 : p.pos+6]); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						p.pos += 6
						return utf8.AppendRune(buf, dec), nil
					}
				}
			}
			if p.exact != nil {
				return nil, p.exact.fail(`holds a lone UTF-16 surrogate escape (\u` + strconv.FormatInt(int64(r), 16) + `), which is not a character`)
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(buf, r), nil
	}
	return nil, p.unexpected("in string escape code")
}

func (p *parser) hex4() (rune, error) {
	for i := 0; i < 4; i++ {
		if p.pos+i >= len(p.data) {
			p.pos += i
			return 0, p.unexpected("")
		}
		if _, ok := hexVal(p.data[p.pos+i]); !ok {
			p.pos += i
			return 0, p.unexpected("in \\u hexadecimal character escape")
		}
	}
	r, _ := parseHex4(p.data[p.pos : p.pos+4])
	p.pos += 4
	return r, nil
}

func parseHex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		v, ok := hexVal(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | v
	}
	return r, true
}

func hexVal(c byte) (rune, bool) {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0'), true
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10), true
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10), true
	}
	return 0, false
}
