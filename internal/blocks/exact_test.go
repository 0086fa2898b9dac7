package blocks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exactNumbers are literals a float64 cannot keep: beyond float64's range, past
// 2^53, negative zero, a redundant fraction and a small exponent.
var exactNumbers = []string{"1e400", "9007199254740993", "-0", "1.0", "0.1e-2", "1E+2", "-123456789012345678901234567890.000"}

func TestMessageKeepsNumbersDigitForDigit(t *testing.T) {
	for _, n := range exactNumbers {
		t.Run(n, func(t *testing.T) {
			meta := `{"example.com/list":[` + n + `,{"deep":` + n + `}],"example.com/n":` + n + `}`
			in := `{"id":"0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b","parent_id":"0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6a","role":"user","message":"m","timestamp":"2026-11-30T14:56:58.500Z","_meta":` + meta + `}`
			var m Message
			require.NoError(t, json.Unmarshal([]byte(in), &m))
			assert.Equal(t, json.Number(n), m.Meta["example.com/n"])
			out, err := json.Marshal(m)
			require.NoError(t, err)
			assert.Equal(t, in, string(out))
		})
	}
}

func TestTimestampsHaveThreeFractionalDigits(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 30, 14, 56, 58, 500_000_000, time.UTC), "2026-11-30T14:56:58.500Z"},
		{time.Date(2026, 11, 30, 14, 56, 58, 0, time.UTC), "2026-11-30T14:56:58.000Z"},
		{time.Date(2026, 11, 30, 14, 56, 58, 123_456_789, time.UTC), "2026-11-30T14:56:58.123Z"},
		{time.Date(2026, 11, 30, 15, 56, 58, 10_000_000, time.FixedZone("CET", 3600)), "2026-11-30T14:56:58.010Z"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, FormatTimestamp(tc.in))
			out, err := json.Marshal(Message{ID: "x", Role: RoleUser, Timestamp: tc.in})
			require.NoError(t, err)
			assert.Contains(t, string(out), `"timestamp":"`+tc.want+`"`)
		})
	}
	// Fixed width: string order is time order.
	assert.Less(t, FormatTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 123_000_000, time.UTC)),
		FormatTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 500_000_000, time.UTC)))
}

func TestCheckExact(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		field string // "" with ok
		ok    bool
	}{
		{name: "numbers of every shape", in: `{"_meta":{"a":[1e400,9007199254740993,-0,1.0,0.1e-2]}}`, ok: true},
		{name: "escapes of real characters", in: `{"message":"\u00e9\ud83d\ude00\u2028"}`, ok: true},
		{name: "duplicate key", in: `{"_meta":{"example.com/a":1,"example.com/a":2}}`, field: `_meta["example.com/a"]`},
		{name: "duplicate top-level key", in: `{"message":"a","message":"b"}`, field: `message`},
		{name: "lone high surrogate", in: `{"_meta":{"example.com/a":{"list":["ok","\ud800"]}}}`, field: `_meta["example.com/a"].list[1]`},
		{name: "lone low surrogate", in: `{"content":{"name":"\udc00"}}`, field: `content.name`},
		{name: "invalid UTF-8", in: "{\"message\":\"\xff\"}", field: `message`},
		{name: "too deep", in: `{"_meta":{"a":` + repeat("[", MaxDepth) + repeat("]", MaxDepth) + `}}`, field: `_meta.a` + repeat("[0]", MaxDepth-2)},
		{name: "just deep enough", in: `{"_meta":{"a":` + repeat("[", MaxDepth-2) + repeat("]", MaxDepth-2) + `}}`, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckExact([]byte(tc.in))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Errors, 1)
			assert.Equal(t, tc.field, ve.Errors[0].Field, ve.Errors[0].Detail)
		})
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestURIFields(t *testing.T) {
	for _, tc := range []struct {
		uri string
		ok  bool
	}{
		{"entity:node/5", true}, {"https://example.com/a?b#c", true}, {"file:///x", true}, {"urn:isbn:1", true},
		{"not a uri", false}, {"", false}, {"rel/path", false}, {"/abs/path", false}, {"https://exa mple.com", false},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			for _, doc := range []struct{ json, field string }{
				{`{"type":"resource_link","name":"n","uri":` + quoteJSON(tc.uri) + `}`, "uri"},
				{`{"type":"resource","resource":{"text":"t","uri":` + quoteJSON(tc.uri) + `}}`, "resource.uri"},
				{`{"type":"resource_link","name":"n","uri":"file:///x","icons":[{"src":` + quoteJSON(tc.uri) + `}]}`, "icons[0].src"},
			} {
				_, err := Decode([]byte(doc.json))
				if tc.ok {
					assert.NoError(t, err, doc.json)
					continue
				}
				var ve *ValidationError
				require.ErrorAs(t, err, &ve, doc.json)
				assert.Equal(t, doc.field, ve.Errors[0].Field)
			}
		})
	}
}

func quoteJSON(s string) string { return string(appendString(nil, s)) }

func TestIsDateTimeLowercase(t *testing.T) {
	for s, want := range map[string]bool{
		"2026-12-03T10:00:00Z": true, "2026-12-03t10:00:00z": true, "2026-12-03t10:00:00.5+01:00": true,
		"2026-12-03 10:00:00Z": false, "2026-12-03T10:00:00": false, "2026-12-03x10:00:00z": false, "": false,
	} {
		assert.Equal(t, want, IsDateTime(s), s)
	}
}

func TestIsRecordKey(t *testing.T) {
	for key, want := range map[string]bool{
		"drupal.org/ai.elicitation_id": true, "DRUPAL.ORG/ai.elicitation_id": true, "Drupal.Org/ai.elicitation_result": true,
		"drupal.org/AI.elicitation_id": false, "drupal.org/ai.citations": false, "example.com/ai.elicitation_id": false, "ai.elicitation_id": false,
	} {
		assert.Equal(t, want, IsRecordKey(key), key)
	}
}

func TestIsCanonicalID(t *testing.T) {
	id := NewID()
	assert.True(t, IsCanonicalID(id))
	assert.True(t, IsCanonicalID("0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b"))
	for _, s := range []string{"", "0196A3B4-7C2D-7E8F-9A0B-1C2D3E4F5A6B", "{0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b}", "0196a3b47c2d7e8f9a0b1c2d3e4f5a6b", "urn:uuid:0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b"} {
		assert.False(t, IsCanonicalID(s), s)
	}
}

func TestKindOf(t *testing.T) {
	for want, vals := range map[string][]any{
		"null": {nil}, "boolean": {true}, "number": {json.Number("1"), 1.5, 3}, "string": {"s"},
		"array": {[]any{}, []string{}, json.RawMessage(` [1]`)}, "object": {map[string]any{}, json.RawMessage(`{}`)},
	} {
		for _, v := range vals {
			assert.Equal(t, want, KindOf(v), "%#v", v)
		}
	}
}

// FuzzCheckExact checks CheckExact's promise: whatever it accepts decodes to
// a value that encodes and decodes again to the same value, numbers and
// strings unchanged, and a message carrying it as _meta survives its own
// JSON round trip; and it never accepts text encoding/json refuses.
func FuzzCheckExact(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1e400,9007199254740993,-0,1.0,0.1e-2]}`, `"\ud83d\ude00\u2028"`, `{"a":1,"a":2}`, `"\ud800"`,
		"\"\xff\"", `[[[[]]]]`, `{"":{"\u0000":null}}`, `-0.0E+00`, `{"x":"<>&"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckExact(data) != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		v, err := parseJSON(data)
		if err != nil {
			t.Fatalf("accepted but does not parse: %v", err)
		}
		enc, err := appendValue(nil, v)
		if err != nil {
			t.Fatalf("does not encode: %v", err)
		}
		v2, err := parseJSON(enc)
		if err != nil {
			t.Fatalf("re-encoding %s does not parse: %v", enc, err)
		}
		if enc2, _ := appendValue(nil, v2); string(enc) != string(enc2) {
			t.Fatalf("value changed:\n%s\n%s", enc, enc2)
		}
		m := Message{ID: "x", Role: RoleUser, Meta: map[string]any{"example.com/v": v}}
		msg, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("message does not encode: %v", err)
		}
		var back Message
		if err := json.Unmarshal(msg, &back); err != nil {
			t.Fatalf("message %s does not decode: %v", msg, err)
		}
		if got, _ := appendValue(nil, back.Meta["example.com/v"]); string(got) != string(enc) {
			t.Fatalf("message changed the value:\n%s\n%s", enc, got)
		}
	})
}
