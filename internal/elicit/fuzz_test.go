package elicit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

// mustBeNilOrViolations fails unless err is nil or a non-empty
// *blocks.ValidationError whose violations all say something.
func mustBeNilOrViolations(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	var ve *blocks.ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) == 0 {
		tb.Fatalf("want nil or a non-empty *blocks.ValidationError, got %T: %v", err, err)
	}
	for _, e := range ve.Errors {
		if e.Detail == "" {
			tb.Fatalf("violation without detail: %+v", e)
		}
	}
}

// FuzzNewRequest feeds arbitrary schema bytes to NewRequest. Properties:
// no panic; a refusal is a *blocks.ValidationError naming a field for every
// violation; an accepted request survives encode → DecodeRequest → encode
// unchanged and validates results.
func FuzzNewRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, schema []byte) {
		req, err := elicit.NewRequest("Please answer", schema, nil)
		if err != nil {
			mustBeNilOrViolations(t, err)
			if req != nil {
				t.Fatal("a refused schema still produced a request")
			}
			var ve *blocks.ValidationError
			errors.As(err, &ve)
			for _, e := range ve.Errors {
				if e.Field == "" {
					t.Fatalf("schema violation without field: %+v", e)
				}
			}
			return
		}
		if !bytes.Equal(schema, req.RequestedSchema) {
			t.Fatalf("schema changed: %q became %q", schema, req.RequestedSchema)
		}
		first, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		decoded, err := elicit.DecodeRequest(first)
		if err != nil {
			t.Fatalf("decode of %s: %v", first, err)
		}
		second, err := json.Marshal(decoded)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the request:\n%s\n%s", first, second)
		}
		if req.IsConfirm() != decoded.IsConfirm() || req.IsConfirm() != elicit.IsTrivialConfirm(schema) {
			t.Fatal("confirm detection disagrees after a round trip")
		}
		mustBeNilOrViolations(t, req.Validate(elicit.Result{Action: elicit.Accept, Content: map[string]any{}}))
		if err := req.Validate(elicit.Result{Action: elicit.Decline}); err != nil {
			t.Fatalf("decline without content refused: %v", err)
		}
	})
}

// FuzzValidateResult feeds arbitrary content bytes, decoded as the API
// decodes them, to Validate against a schema using every property kind.
// Properties: no panic; the answer is nil or a *blocks.ValidationError; the
// same content gets the same answer twice, in the same order.
func FuzzValidateResult(f *testing.F) {
	req, err := elicit.NewRequest("Please answer", json.RawMessage(richSchema), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		dec := json.NewDecoder(bytes.NewReader(content))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil {
			return
		}
		res := elicit.Result{Action: elicit.Accept, Content: m}
		first := req.Validate(res)
		mustBeNilOrViolations(t, first)
		second := req.Validate(res)
		if (first == nil) != (second == nil) || (first != nil && first.Error() != second.Error()) {
			t.Fatalf("validation is not deterministic: %v / %v", first, second)
		}
		declined := req.Validate(elicit.Result{Action: elicit.Decline, Content: m})
		if (len(m) == 0) != (declined == nil) {
			t.Fatalf("decline with content %v: %v", m, declined)
		}
	})
}
