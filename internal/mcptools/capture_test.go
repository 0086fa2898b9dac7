package mcptools

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// FuzzCaptureSSE feeds a server's SSE response, in pieces, through the
// capture that reads along with go-sdk: it must never fail the read or
// panic, and it must find a result that is there.
func FuzzCaptureSSE(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"), uint8(7))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\r\ndata: \"result\":{}}\r\n\r\n"), uint8(1))
	f.Add([]byte("data: not json\n\n: comment\n\ndata:"), uint8(3))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		c := newCapture()
		b := &captureBody{ReadCloser: io.NopCloser(&pieces{data: stream, n: int(chunk%16) + 1}), token: "t", cap: c, sse: true}
		got, err := io.ReadAll(b)
		if err != nil || !bytes.Equal(got, stream) {
			t.Fatalf("the reader's bytes changed: %v", err)
		}
		if raw, ok := c.take("t"); ok && !json.Valid(raw) {
			t.Fatalf("captured invalid JSON %q", raw)
		}
	})
}

func TestCaptureSSEFindsTheResult(t *testing.T) {
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"elicitation/create\",\"id\":5,\"params\":{}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\",\"annotations\":{\"priority\":0}}]}}\n\n"
	for n := 1; n <= len(stream); n += 7 {
		c := newCapture()
		b := &captureBody{ReadCloser: io.NopCloser(&pieces{data: []byte(stream), n: n}), token: "t", cap: c, sse: true}
		_, _ = io.ReadAll(b)
		raw, ok := c.take("t")
		if !ok || string(raw) != `{"content":[{"type":"text","text":"a","annotations":{"priority":0}}]}` {
			t.Fatalf("pieces of %d: got %q, %v", n, raw, ok)
		}
	}
}

// pieces reads data n bytes at a time.
type pieces struct {
	data []byte
	n    int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	k := min(p.n, len(b), len(p.data))
	copy(b, p.data[:k])
	p.data = p.data[k:]
	return k, nil
}
