package agui_test

import (
	"errors"
	"testing"

	"chatd/internal/blocks"
	"chatd/internal/protocol"
	"chatd/internal/protocol/agui"
)

// FuzzDecodeRequest: any body is read or refused with an error the API
// maps to a 4xx — never a panic, never another error — and a request read
// asks for exactly one thing: a message or an answer.
func FuzzDecodeRequest(f *testing.F) {
	// More seeds are in testdata/fuzz/FuzzDecodeRequest.
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := agui.DecodeRequest(body)
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
		asks := req.Text != "" || len(req.Blocks) > 0
		if (req.Answer != nil) == asks {
			t.Fatalf("a request must be a message or an answer, not both or neither: %+v", req)
		}
	})
}
