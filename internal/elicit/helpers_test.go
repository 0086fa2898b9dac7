package elicit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"github.com/stretchr/testify/require"
)

// mustNewRequest builds a request from a schema literal and fails the test
// when the schema is refused.
func mustNewRequest(tb testing.TB, schema string) *elicit.Request {
	tb.Helper()
	req, err := elicit.NewRequest("Please answer", json.RawMessage(schema), nil)
	require.NoError(tb, err)
	return req
}

// mustFieldErrors returns the violations of err, which must be a
// *blocks.ValidationError.
func mustFieldErrors(tb testing.TB, err error) []blocks.FieldError {
	tb.Helper()
	require.Error(tb, err)
	var ve *blocks.ValidationError
	require.True(tb, errors.As(err, &ve), "want *blocks.ValidationError, got %T: %v", err, err)
	require.NotEmpty(tb, ve.Errors)
	return ve.Errors
}

// mustDecodeContent decodes result content the way the API does, with
// numbers as json.Number.
func mustDecodeContent(tb testing.TB, content string) map[string]any {
	tb.Helper()
	if content == "" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(content)))
	dec.UseNumber()
	var m map[string]any
	require.NoError(tb, dec.Decode(&m))
	return m
}

// mustMarshal encodes v and fails the test on error.
func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := json.Marshal(v)
	require.NoError(tb, err)
	return data
}
