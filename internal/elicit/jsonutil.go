package elicit

import (
	"bytes"
	"encoding/json"

	"chatd/internal/blocks"
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
	if blocks.KindOf(raw) != "object" {
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

// decodeString returns the string value of raw, or ok false when raw is not
// a JSON string.
func decodeString(raw json.RawMessage) (s string, ok bool) {
	if blocks.KindOf(raw) != "string" {
		return "", false
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// decodeArray returns the elements of raw, or ok false when raw is not a
// JSON array.
func decodeArray(raw json.RawMessage) (elems []json.RawMessage, ok bool) {
	if blocks.KindOf(raw) != "array" {
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
