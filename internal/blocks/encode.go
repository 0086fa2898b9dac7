package blocks

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The block tree holds only the values a UseNumber decode produces
// (map[string]any, []any, string, json.Number, bool, nil), so a small
// hand-written encoder covers it; it writes object keys in sorted order so the
// output is deterministic, which is what makes re-encoding byte-stable.

// appendValue appends the JSON encoding of v.
func appendValue(buf []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, v), nil
	case string:
		return appendString(buf, v), nil
	case json.Number:
		return append(buf, v...), nil
	case map[string]any:
		return appendObject(buf, v, "")
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendValue(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	default:
		// Not produced by decoding; kept for values a future constructor
		// might store directly.
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return append(buf, b...), nil
	}
}

// appendObject appends m with its keys sorted, except that first (when not
// empty and present) is written before all others.
func appendObject(buf []byte, m map[string]any, first string) ([]byte, error) {
	_, lead := m[first]
	lead = lead && first != ""
	keys := make([]string, 0, len(m))
	for k := range m {
		if !lead || k != first {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if lead {
		keys = slices.Insert(keys, 0, first)
	}
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, k)
		buf = append(buf, ':')
		var err error
		if buf, err = appendValue(buf, m[k]); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaping what JSON requires plus
// U+2028 and U+2029 (as encoding/json does) and replacing invalid UTF-8 with
// U+FFFD, so the output is always valid JSON.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// AppendString appends s to buf as a JSON string, escaped as Marshal
// escapes strings, for hot paths that build small JSON documents by hand.
func AppendString(buf []byte, s string) []byte { return appendString(buf, s) }

// Marshal encodes v compactly without HTML escaping (chat text is full of
// <, > and &, and escaping them only obscures it). It is how chatd writes
// every JSON body and event.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
