package remote

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"chatd/internal/blocks"
	"chatd/internal/processor"
)

// The types of a stream's lines.
const (
	lineDelta  = "text.delta"
	lineResult = "result"
)

// lineWire is one line of a streamed answer: a text delta
// {"type":"text.delta","delta":…,"_meta"?:…}, or the result
// {"type":"result", …the JSON answer…}.
type lineWire struct {
	Type  string  `json:"type"`
	Delta *string `json:"delta"`
	answerWire
}

// readStream reads an NDJSON answer: text.delta lines, each emitted as soon
// as it is read, then one result line, then nothing but blank lines to the
// end, which is read so that the connection can serve the next turn. Blank
// lines anywhere are skipped (a processor may send them to keep a
// connection open); the last line needs no newline.
func readStream(r io.Reader, emit processor.Emit) (processor.Output, error) {
	lines := lineReader{r: bufio.NewReader(r)}
	for n := 1; ; n++ {
		line, err := lines.next()
		if err != nil && err != io.EOF {
			// What was read of a line the connection cut is no line.
			return processor.Output{}, brokenStream(err)
		}
		if !isBlank(line) {
			out, done, lerr := decodeLine(line, n, emit)
			if lerr != nil {
				return processor.Output{}, lerr
			}
			if done {
				return out, lines.rest(n)
			}
		}
		if err == io.EOF {
			return processor.Output{}, &processor.Error{Detail: "the remote processor's stream ended before its result line"}
		}
	}
}

// decodeLine decodes line n; done when it was the result.
func decodeLine(line []byte, n int, emit processor.Emit) (out processor.Output, done bool, err error) {
	if text, ok := plainDelta(line); ok {
		emitDelta(emit, processor.Delta{Text: text})
		return processor.Output{}, false, nil
	}
	where := fmt.Sprintf("line %d", n)
	var l lineWire
	if err := decodeFields(line, &l); err != nil {
		return processor.Output{}, false, invalid(where, err)
	}
	switch l.Type {
	case lineDelta:
		d, err := l.delta()
		if err != nil {
			return processor.Output{}, false, invalid(where, err)
		}
		emitDelta(emit, d)
		return processor.Output{}, false, nil
	case lineResult:
		// Only the result is held to blocks.CheckExact: it is what chatd
		// stores, while a delta is shown once and superseded by it.
		if err := blocks.CheckExact(line); err != nil {
			return processor.Output{}, false, invalid(where, err)
		}
		if l.Delta != nil {
			return processor.Output{}, false, invalid(where, blocks.FieldError{Field: "delta", Detail: "is a field of text.delta lines, not of the result"})
		}
		out, err := l.output()
		if err != nil {
			return processor.Output{}, false, invalid(where, err)
		}
		return out, true, nil
	}
	return processor.Output{}, false, invalid(where, blocks.FieldError{Field: "type", Detail: fmt.Sprintf("want %q or %q", lineDelta, lineResult)})
}

// The form of most delta lines, which plainDelta reads without a decoder.
const (
	plainDeltaPrefix = `{"type":"text.delta","delta":"`
	plainDeltaSuffix = `"}`
)

// plainDelta reads a delta line of the one form most processors write,
// {"type":"text.delta","delta":"…"} whose text needs no unescaping: no
// quote, backslash or control character, and valid UTF-8. Anything else,
// ok false, goes through the decoder, which reads these lines the same
// way (FuzzPlainDelta checks): a stream is a line like this per word.
func plainDelta(line []byte) (text string, ok bool) {
	line = bytes.TrimRight(line, "\r\n")
	rest, ok := bytes.CutPrefix(line, []byte(plainDeltaPrefix))
	if !ok {
		return "", false
	}
	if rest, ok = bytes.CutSuffix(rest, []byte(plainDeltaSuffix)); !ok {
		return "", false
	}
	for _, c := range rest {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(rest) {
		return "", false
	}
	return string(rest), true
}

// delta checks a text.delta line, which holds only delta and _meta.
func (l *lineWire) delta() (processor.Delta, error) {
	var ve blocks.ValidationError
	if l.Delta == nil {
		ve.Add("delta", "is required (it may be empty)")
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"text", l.Text != nil}, {"content_blocks", l.ContentBlocks != nil}, {"pause", l.Pause != nil}} {
		if f.set {
			ve.Add(f.name, "is a field of the result line, not of text.delta lines")
		}
	}
	meta := decodeMeta(l.Meta, "_meta", &ve)
	if err := ve.Err(); err != nil {
		return processor.Delta{}, err
	}
	return processor.Delta{Text: *l.Delta, Meta: meta}, nil
}

// emitDelta emits d unless it carries nothing: an empty delta without
// _meta would reach the clients as an event that says nothing.
func emitDelta(emit processor.Emit, d processor.Delta) {
	if d.Text != "" || len(d.Meta) > 0 {
		emit(d)
	}
}

// rest reads what follows the result line, line last, to the end.
func (lines *lineReader) rest(last int) error {
	for {
		line, err := lines.next()
		if !isBlank(line) {
			return invalid(fmt.Sprintf("after line %d", last), errors.New("nothing may follow the result line"))
		}
		if err != nil {
			// io.EOF, or a connection that broke after the answer was
			// whole, which lost nothing of it.
			return nil
		}
	}
}

// lineReader reads a stream line by line, however long a line is.
type lineReader struct {
	r *bufio.Reader
	// long holds a line longer than r's buffer.
	long []byte
}

// next returns the next line, newline included, valid until the next call,
// and the error that ended the stream after it (io.EOF at its end).
func (lines *lineReader) next() ([]byte, error) {
	lines.long = lines.long[:0]
	for {
		chunk, err := lines.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			lines.long = append(lines.long, chunk...)
			continue
		}
		if len(lines.long) == 0 {
			return chunk, err
		}
		lines.long = append(lines.long, chunk...)
		return lines.long, err
	}
}

func isBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// brokenStream is the failure of a stream that broke off mid-answer.
func brokenStream(err error) error {
	if errors.Is(err, errTooLarge) {
		return brokenAnswer(err)
	}
	return &processor.Error{Detail: "the remote processor's stream broke before its result line", Err: err}
}
