package blocks

import (
	"encoding/json"
	"strings"
)

// MaxDepth is how deeply a request body checked by CheckExact may nest
// objects and arrays, whatever a deployment allows otherwise. Stored records
// wrap a client's values a few levels deeper (a history page holds messages
// holding _meta holding an answer's content), so a bound far below every
// decoder's own limit (10,000 levels in encoding/json) keeps whatever chatd
// accepts readable wherever it is later served.
const MaxDepth = 512

// CheckExact checks that data, one JSON value, is one chatd keeps exactly:
// decoding it and writing it back gives the same value, every number digit
// for digit (numbers are kept as written, so any JSON number passes) and
// every string character for character. What a decode would change is
// refused: an object key given twice (only one value could be kept), text
// that is not UTF-8, an escaped UTF-16 surrogate without its pair (not a
// character, so it would come back as U+FFFD), and nesting deeper than
// MaxDepth. The error is a *ValidationError naming the path of the offending
// value (_meta["example.com/x"].list[2]); invalid JSON is reported at "".
func CheckExact(data []byte) error {
	p := parser{data: data, exact: &exactness{}}
	p.skipSpace()
	_, err := p.value()
	if err == nil {
		p.skipSpace()
		if p.pos < len(p.data) {
			err = p.errorf("data after the value")
		}
	}
	if err == nil {
		return nil
	}
	if fe, ok := err.(FieldError); ok {
		return &ValidationError{Errors: []FieldError{fe}}
	}
	return &ValidationError{Errors: []FieldError{{Detail: err.Error()}}}
}

// exactness is CheckExact's state inside the parser: the path of the value
// being parsed, one segment per enclosing object or array.
type exactness struct {
	path []string
}

// fail reports a value the decode would not keep, at the current path.
func (e *exactness) fail(detail string) error {
	var b strings.Builder
	for _, seg := range e.path {
		if b.Len() > 0 && seg != "" && seg[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return FieldError{Field: b.String(), Detail: detail}
}

// keySegment is an object key as a path segment: plain names as they are
// (content_blocks, resource), any other key in brackets and JSON quotes, as
// _meta keys are written (_meta["drupal.org/ai.citations"]).
func keySegment(key string) string {
	if key != "" && strings.IndexFunc(key, func(r rune) bool {
		return !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 && (key[0] < '0' || key[0] > '9') {
		return key
	}
	return "[" + string(appendString(nil, key)) + "]"
}

// KindOf names the JSON type of a value in the words error details use:
// "null", "boolean", "number", "string", "array" or "object". It takes
// decoded values (json.Number, float64 and Go's other number types count as
// numbers, []string as an array) and undecoded ones (json.RawMessage or []byte
// holding valid JSON, judged by its first byte).
func KindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "number"
	case string:
		return "string"
	case []any, []string:
		return "array"
	case map[string]any:
		return "object"
	case []byte:
		return KindOf(json.RawMessage(v))
	case json.RawMessage:
		raw := strings.TrimLeft(string(v), " \t\r\n")
		if raw == "" {
			return "nothing"
		}
		switch raw[0] {
		case '{':
			return "object"
		case '[':
			return "array"
		case '"':
			return "string"
		case 't', 'f':
			return "boolean"
		case 'n':
			return "null"
		}
		return "number"
	}
	return "unsupported value"
}

// withArticle prefixes a KindOf name with its indefinite article.
func withArticle(kind string) string {
	switch kind {
	case "null", "nothing":
		return kind
	case "array", "object", "unsupported value":
		return "an " + kind
	}
	return "a " + kind
}
