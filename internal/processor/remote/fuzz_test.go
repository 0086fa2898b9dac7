package remote

import (
	"bytes"
	"testing"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
)

// A streamed answer is whatever the remote processor writes: any bytes
// either fail the turn with a *processor.Error or give an output chatd can
// store as it stores any processor's, and every delta emitted on the way is
// one it can stream.
func FuzzNDJSON(f *testing.F) {
	f.Add([]byte(`{"type":"text.delta","delta":"Hel"}` + "\n" + `{"type":"text.delta","delta":"lo"}` + "\n" + `{"type":"result","text":"Hello"}` + "\n"))
	f.Add([]byte(`{"type":"result","text":""}`))
	f.Add([]byte("\n\n" + `{"type":"result","text":"x","content_blocks":[{"type":"text","text":"y"}],"_meta":{"example.com/a.b":1}}` + "\n\n"))
	f.Add([]byte(`{"type":"text.delta","delta":"x"` + "\n"))
	f.Add([]byte(`{"type":"result","text":"x"}` + "\n" + `{"type":"result","text":"y"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var deltas []processor.Delta
		out, err := readStream(bytes.NewReader(data), func(d processor.Delta) { deltas = append(deltas, d) })
		for _, d := range deltas {
			if err := blocks.ValidateMeta(d.Meta, "_meta"); err != nil {
				t.Fatalf("a delta with invalid _meta was emitted: %v", err)
			}
		}
		if err != nil {
			if _, ok := err.(*processor.Error); !ok {
				t.Fatalf("error %T is not a *processor.Error: %v", err, err)
			}
			return
		}
		if err := blocks.ValidateMeta(out.Meta, "_meta"); err != nil {
			t.Fatalf("output with invalid _meta: %v", err)
		}
		if _, err := blocks.Marshal(blocks.Message{Text: out.Text, ContentBlocks: out.Blocks, Meta: out.Meta}); err != nil {
			t.Fatalf("output does not encode: %v", err)
		}
		if out.Pause != nil {
			req, err := blocks.Marshal(out.Pause.Request)
			if err == nil {
				_, err = elicit.DecodeRequest(req)
			}
			if err != nil {
				t.Fatalf("pause whose request does not decode again: %v", err)
			}
			if len(out.Pause.State) > MaxStateBytes {
				t.Fatalf("state of %d bytes", len(out.Pause.State))
			}
		}
	})
}

// plainDelta reads the lines it accepts exactly as the decoder does.
func FuzzPlainDelta(f *testing.F) {
	f.Add([]byte(`{"type":"text.delta","delta":"Hello, "}` + "\n"))
	f.Add([]byte(`{"type":"text.delta","delta":"çà ✓ 🙂"}` + "\r\n"))
	f.Add([]byte(`{"type":"text.delta","delta":""}`))
	f.Add([]byte(`{"type":"text.delta","delta":"a\"b"}`))
	f.Add([]byte(`{"type":"text.delta","delta":"x"} {"type":"text.delta","delta":"y"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		text, ok := plainDelta(line)
		if !ok {
			return
		}
		var l lineWire
		if err := decodeFields(line, &l); err != nil {
			t.Fatalf("plainDelta read %q, the decoder refuses it: %v", line, err)
		}
		if l.Type != lineDelta || l.Delta == nil || *l.Delta != text || l.Meta != nil || l.Text != nil || l.ContentBlocks != nil || l.Pause != nil {
			t.Fatalf("plainDelta read %q as %q; the decoder reads %+v", line, text, l)
		}
	})
}
