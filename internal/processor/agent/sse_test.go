package agent

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseEvents reads every event of body with d.
func sseEvents(d ssestream.Decoder) ([]ssestream.Event, error) {
	var out []ssestream.Event
	for d.Next() {
		e := d.Event()
		out = append(out, ssestream.Event{Type: e.Type, Data: bytes.Clone(e.Data)})
	}
	return out, d.Err()
}

// librarySSEEvents reads body with the client library's decoder, the one
// sseDecoder stands in for.
func librarySSEEvents(body []byte) ([]ssestream.Event, error) {
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
	return sseEvents(ssestream.NewDecoder(res))
}

var sseSeeds = []string{
	"data: {\"a\":1}\n\ndata: [DONE]\n\n",
	"event: e\r\ndata: x\r\ndata: y\r\n\r\n: comment\n\ndata:z\n\n",
	"data: no end",
	"\n\n\nid: 3\nretry: 10\ndata: a:b\n\nevent: only\n\n",
	"data: " + strings.Repeat("long", 400) + "\n\ndata: after\n\n",
	"data: " + strings.Repeat("x", sseBuffer-7) + "\r\n\r\n",
}

// TestSSEDecoderMatchesLibrary: chatd's decoder of model streams reads
// the events the client library's reads, lines longer than its buffer
// included.
func TestSSEDecoderMatchesLibrary(t *testing.T) {
	for _, body := range sseSeeds {
		want, err := librarySSEEvents([]byte(body))
		require.NoError(t, err)
		got, err := sseEvents(newSSEDecoder(io.NopCloser(strings.NewReader(body))))
		require.NoError(t, err)
		assert.Equal(t, want, got, "%q", body)
	}
}

// A model stream is the model server's to write: whatever it sends, chatd's
// decoder reads the events the library's would.
func FuzzSSEDecoder(f *testing.F) {
	for _, s := range sseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, wantErr := librarySSEEvents(body)
		got, err := sseEvents(newSSEDecoder(io.NopCloser(bytes.NewReader(body))))
		if (wantErr == nil) != (err == nil) {
			t.Fatalf("errors differ: library %v, chatd %v", wantErr, err)
		}
		if len(want) != len(got) {
			t.Fatalf("library read %d events, chatd %d: %q", len(want), len(got), body)
		}
		for i := range want {
			if want[i].Type != got[i].Type || !bytes.Equal(want[i].Data, got[i].Data) {
				t.Fatalf("event %d: library %q, chatd %q", i, want[i], got[i])
			}
		}
	})
}
