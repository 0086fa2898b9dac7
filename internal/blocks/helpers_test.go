package blocks

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQQAAAAAABAA"
	testUUID  = "0196a3b4-7c2d-7e8f-9a0b-1c2d3e4f5a6b"
)

// mustJSONValue decodes data with numbers as json.Number, so comparisons see
// the digits as written rather than a float64 approximation.
func mustJSONValue(tb testing.TB, data []byte) any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	require.NoError(tb, dec.Decode(&v), "decoding %s", data)
	return v
}

func mustDecode(tb testing.TB, data string) ContentBlock {
	tb.Helper()
	b, err := Decode([]byte(data))
	require.NoError(tb, err, "decoding %s", data)
	return b
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := json.Marshal(v)
	require.NoError(tb, err)
	return data
}

// requireFieldErrors asserts that err is a *ValidationError holding exactly
// want, in order.
func requireFieldErrors(tb testing.TB, want []FieldError, err error) {
	tb.Helper()
	require.Error(tb, err)
	var ve *ValidationError
	require.ErrorAs(tb, err, &ve)
	require.Equal(tb, want, ve.Errors)
}
