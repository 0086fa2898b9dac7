package mcptools

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"chatd/internal/processor/agent"
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
		b := &captureBody{ReadCloser: io.NopCloser(&pieces{data: stream, n: int(chunk%16) + 1}), keep: func(r json.RawMessage) { c.put("t", r) }, cap: c, sse: true}
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
		b := &captureBody{ReadCloser: io.NopCloser(&pieces{data: []byte(stream), n: n}), keep: func(r json.RawMessage) { c.put("t", r) }, cap: c, sse: true}
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

// FuzzProgress feeds a server's notifications/progress params to the
// capture: no panic; a report reaches only the call whose token it names,
// with numbers that are JSON numbers as the server wrote them.
func FuzzProgress(f *testing.F) {
	f.Add([]byte(`{"progressToken":"t","progress":1.50,"total":1e400,"message":"step"}`))
	f.Add([]byte(`{"progressToken":"other","progress":1}`))
	f.Add([]byte(`{"progressToken":7,"progress":1}`))
	f.Add([]byte(`{"progressToken":"t","progress":"1","total":null,"message":3}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, params []byte) {
		c := newCapture()
		var got []agent.ToolStatus
		unwatch := c.watch("t", func(st agent.ToolStatus) { got = append(got, st) })
		defer unwatch()
		c.progress(params)
		c.listed(params)
		for _, st := range got {
			if n, ok := number(json.RawMessage(st.Progress)); !ok || n != st.Progress {
				t.Fatalf("progress %q is not a JSON number", st.Progress)
			}
			if !bytes.Contains(params, []byte(st.Progress)) {
				t.Fatalf("progress %q is not as the server wrote it", st.Progress)
			}
		}
	})
}

func TestProgressForOtherTokensIgnored(t *testing.T) {
	c := newCapture()
	var got []agent.ToolStatus
	defer c.watch("t", func(st agent.ToolStatus) { got = append(got, st) })()
	for _, p := range []string{
		`{"progressToken":"other","progress":1}`,
		`{"progressToken":7,"progress":1}`,
		`{"progressToken":"t","progress":"1"}`,
		`{"progressToken":"t"}`,
		`not json`,
	} {
		c.progress(json.RawMessage(p))
	}
	if len(got) != 0 {
		t.Fatalf("reported %v", got)
	}
	c.progress(json.RawMessage(`{"progressToken":"t","progress":9007199254740993,"total":1e400,"message":"m"}`))
	want := agent.ToolStatus{Progress: "9007199254740993", Total: "1e400", Message: "m"}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("want %v, got %v", want, got)
	}
}

// FuzzReadEvents feeds a server's SSE response to chatd's own requests'
// reader: it must never panic, and it hands on only what was sent.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Add([]byte("data: {\"a\":\r\ndata: 1}\r\n\r\ndata: tail"))
	f.Add([]byte(": comment\n\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		_ = readEvents(bytes.NewReader(stream), func(data []byte) bool {
			if len(data) > len(stream) {
				t.Fatalf("an event of %d bytes from a stream of %d", len(data), len(stream))
			}
			return false
		})
	})
}

func TestReadEventsJoinsDataLines(t *testing.T) {
	var got []string
	err := readEvents(bytes.NewReader([]byte("data: {\"a\":\r\ndata: 1}\r\n\r\ndata: x\n\n")), func(data []byte) bool {
		got = append(got, string(data))
		return string(data) == "x"
	})
	if err != nil || len(got) != 2 || got[0] != "{\"a\":\n1}" {
		t.Fatalf("got %q, %v", got, err)
	}
	if err := readEvents(bytes.NewReader([]byte("data: y\n\n")), func([]byte) bool { return false }); err == nil {
		t.Fatal("a stream that ends without the answer is an error")
	}
}

// TestTaskResultRefused: a task handle (the 2026-07-28 tasks extension)
// that reaches the result unfollowed, from a server of an earlier protocol
// version, fails the call with a clear error rather than passing for an
// empty result.
func TestTaskResultRefused(t *testing.T) {
	_, next, err := (&Server{}).result(outcome{raw: json.RawMessage(`{"resultType":"task","task":{"taskId":"t1","status":"working"}}`)})
	if err == nil || next != nil || !strings.Contains(err.Error(), "the server answered with a task") {
		t.Fatalf("got %v, %v", next, err)
	}
}
