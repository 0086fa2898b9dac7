package elicit

import (
	"bytes"
	"encoding/json"
)

// member is one key/value pair of a JSON object, kept in document order so
// that violations are reported in the order the author wrote them.
type member struct {
	key string
	val json.RawMessage
}

// decodeObject splits a JSON object into its members, in order. It reports
// keys that occur more than once: encoding/json silently keeps the last one,
// another consumer may keep the first, and a schema that means different
// things to the server and to the frontend is not one chatd will emit. raw
// must already be valid JSON; ok is false when it is not an object.
func decodeObject(raw json.RawMessage) (members []member, dups []string, ok bool) {
	if jsonKind(raw) != "object" {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, nil, false
	}
	var seen map[string]struct{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, nil, false
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		if _, dup := seen[key]; dup {
			dups = append(dups, key)
			continue
		}
		seen[key] = struct{}{}
		members = append(members, member{key: key, val: val})
	}
	return members, dups, true
}

// jsonKind names the JSON type of a valid JSON value, in the words used in
// error details.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
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
	default:
		return "number"
	}
}

// decodeString returns the string value of raw, or ok false when raw is not
// a JSON string.
func decodeString(raw json.RawMessage) (s string, ok bool) {
	if jsonKind(raw) != "string" {
		return "", false
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// decodeArray returns the elements of raw, or ok false when raw is not a
// JSON array.
func decodeArray(raw json.RawMessage) (elems []json.RawMessage, ok bool) {
	if jsonKind(raw) != "array" {
		return nil, false
	}
	return elems, json.Unmarshal(raw, &elems) == nil
}

// decodeAny decodes raw the way the API decodes client input, with numbers
// kept as json.Number, so that defaults are checked by the same code as
// submitted values.
func decodeAny(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// valueKind names the JSON type of a decoded Go value, in the words used in
// error details.
func valueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "number"
	case []any, []string:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "unsupported value"
	}
}
