package blocks

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// stdlibParse is the reference parseJSON must match: encoding/json with
// UseNumber, rejecting anything json.Valid rejects.
func stdlibParse(data []byte) (any, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

var parseSeeds = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `tru`, `0`, `-0`, `01`, `-`, `1.`, `1.5e`, `1.5e+3`, `1E-0`, `-12.5e10`,
	`""`, `"a`, `"\u00e9\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	`"\x"`, `"\u12"`, `"\u12G4"`, "\"\xff\xfe\"", "\"tab\there\"", "\"\xe2\x80\xa8\"", `"\/\b\f\n\r\t\\\""`,
	`{}`, `{"a":1,"a":2}`, `{"a" : [1, {"b": null}] }`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `[]`, `[1,]`, `[1 2]`, `[`, `]`,
	`{"a":1} `, `{"a":1} x`, `{} {}`, "\ufeff{}", `{"type":"text","text":"x"}`,
}

// deepSeeds sit at encoding/json's nesting limit; they stay out of the fuzz
// seeds because the fuzzer spends its time minimizing inputs that large.
var deepSeeds = []string{
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
}

func TestParseMatchesStdlib(t *testing.T) {
	for _, s := range append(parseSeeds, deepSeeds...) {
		want, wantOK := stdlibParse([]byte(s))
		got, err := parseJSON([]byte(s))
		name := s
		if len(name) > 40 {
			name = name[:40]
		}
		assert.Equal(t, wantOK, err == nil, "input %q: error %v", name, err)
		if wantOK && err == nil {
			assert.Equal(t, want, got, "input %q", name)
		}
	}
}

// FuzzParseMatchesStdlib checks parseJSON against encoding/json on any input.
func FuzzParseMatchesStdlib(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantOK := stdlibParse(data)
		got, err := parseJSON(data)
		if wantOK != (err == nil) {
			t.Fatalf("input %q: encoding/json ok=%v, parseJSON error %v", data, wantOK, err)
		}
		if wantOK && !reflect.DeepEqual(want, got) {
			t.Fatalf("input %q: encoding/json %#v, parseJSON %#v", data, want, got)
		}
	})
}
