package api

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJSONDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want int
	}{
		{`1`, 0},
		{`{}`, 1},
		{`{"a":[1,{"b":[]}]}`, 4},
		{`{"a":"[[[[{{{{"}`, 1},
		{`{"a":"\"[[["}`, 1},
		{`{"a":"\\"}`, 1},
		{`[[[]],[[[]]]]`, 4},
	} {
		assert.Equal(t, tc.want, jsonDepth([]byte(tc.body), 100), tc.body)
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	assert.Equal(t, 65, jsonDepth([]byte(deep), 64), "stops past the limit")
}

func TestArrayLen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want int
	}{
		{`[]`, 0},
		{` [ ] `, 0},
		{`[1]`, 1},
		{`[{"a":[1,2,3]},"x,y",[4,5]]`, 3},
		{`["\",", {"k":","}]`, 2},
	} {
		assert.Equal(t, tc.want, arrayLen([]byte(tc.raw)), tc.raw)
	}
}

// referenceDepth is encoding/json's view of a valid document's nesting.
func referenceDepth(body []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest, true
		}
		if err != nil {
			return 0, false
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
				deepest = max(deepest, depth)
			} else {
				depth--
			}
		}
	}
}

// FuzzJSONDepth checks the bracket scan against encoding/json on every valid
// document, and that it never panics on anything else.
func FuzzJSONDepth(f *testing.F) {
	for _, seed := range []string{`{"a":[1,{"b":"]]\"["}]}`, `[[[]]]`, `"\\"`, `{"x":"\u005b"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := jsonDepth(body, 1<<20)
		if !json.Valid(body) {
			return
		}
		if want, ok := referenceDepth(body); ok && want != got {
			t.Fatalf("%q: depth %d, encoding/json says %d", body, got, want)
		}
		var v any
		if json.Unmarshal(body, &v) == nil {
			if arr, ok := v.([]any); ok && arrayLen(bytes.TrimSpace(body)) != len(arr) {
				t.Fatalf("%q: %d elements counted, %d decoded", body, arrayLen(body), len(arr))
			}
		}
	})
}
