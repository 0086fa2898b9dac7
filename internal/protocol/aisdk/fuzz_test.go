package aisdk_test

import (
	"errors"
	"testing"

	"chatd/internal/blocks"
	"chatd/internal/protocol"
	"chatd/internal/protocol/aisdk"
)

// FuzzDecodeRequest: any body is read or refused with an error the API
// maps to a 4xx — never a panic, never another error — and a request read
// asks for exactly one thing: a message or an answer.
func FuzzDecodeRequest(f *testing.F) {
	// More seeds are in testdata/fuzz/FuzzDecodeRequest.
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := aisdk.DecodeRequest(body)
		if err != nil {
			var ierr *protocol.InputError
			var verr *blocks.ValidationError
			if !errors.As(err, &ierr) && !errors.As(err, &verr) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if req.ThreadID == "" {
			t.Fatal("a request read without a thread ID")
		}
		kinds := 0
		for _, is := range []bool{req.Text != "" || len(req.Blocks) > 0, req.Answer != nil, req.Regenerate} {
			if is {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("a request must be one of a message, an answer or a regenerate: %+v", req)
		}
	})
}
