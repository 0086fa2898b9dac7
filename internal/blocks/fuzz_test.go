package blocks

import (
	"reflect"
	"testing"
)

// FuzzDecode checks that decoding never panics and that whatever decodes
// re-encodes to the same JSON object, and re-encodes stably.
func FuzzDecode(f *testing.F) {
	for _, tc := range validBlocks {
		f.Add([]byte(tc.json))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data)
		if err != nil {
			return
		}
		enc, err := b.MarshalJSON()
		if err != nil {
			t.Fatalf("decoded block does not encode: %v", err)
		}
		if got, want := mustJSONValue(t, enc), mustJSONValue(t, data); !reflect.DeepEqual(want, got) {
			t.Fatalf("round trip changed the object:\n in: %s\nout: %s", data, enc)
		}
		b2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		enc2, err := b2.MarshalJSON()
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		if string(enc) != string(enc2) {
			t.Fatalf("encoding not stable:\n%s\n%s", enc, enc2)
		}
	})
}
