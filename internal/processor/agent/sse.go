package agent

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// sseDecoder reads a model's text/event-stream answer as the client
// library's decoder does, event for event, on a smaller buffer: that one
// keeps a 4 KiB line buffer for the life of the stream, and with thousands
// of streams open such buffers are much of what each costs. A model sends
// lines of a few hundred bytes; a longer line is gathered across reads.
type sseDecoder struct {
	rc   io.ReadCloser
	r    *bufio.Reader
	long []byte // a line longer than r's buffer, gathered
	evt  ssestream.Event
	err  error
}

// sseBuffer is the read buffer of a model stream's decoder.
const sseBuffer = 512

// maxSSELine bounds one line of a model stream, as the library's decoder
// does (its scanner's limit).
const maxSSELine = bufio.MaxScanTokenSize << 9

// errSSELineTooLong is a model stream line past maxSSELine.
var errSSELineTooLong = errors.New("agent: model stream line too long")

func newSSEDecoder(rc io.ReadCloser) *sseDecoder {
	return &sseDecoder{rc: rc, r: bufio.NewReaderSize(rc, sseBuffer)}
}

// Next reads the next event, reporting false at the end of the stream or
// on an error (see Err). An event not ended by a blank line is dropped.
func (d *sseDecoder) Next() bool {
	if d.err != nil {
		return false
	}
	event := ""
	var data []byte
	for {
		line, ok := d.line()
		if !ok {
			return false
		}
		if len(line) == 0 {
			if len(data) == 0 {
				event = ""
				continue
			}
			d.evt = ssestream.Event{Type: event, Data: data}
			return true
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			event = string(value)
		case "data":
			data = append(data, value...)
			data = append(data, '\n')
		}
	}
}

// line returns the next line without its line ending (\n or \r\n), valid
// until the next call; the last line may end without one. ok is false at
// the end of the stream or on an error, which is kept for Err.
func (d *sseDecoder) line() (line []byte, ok bool) {
	line, err := d.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		d.long = append(d.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = d.r.ReadSlice('\n')
			if d.long = append(d.long, line...); len(d.long) > maxSSELine {
				d.err = errSSELineTooLong
				return nil, false
			}
		}
		line = d.long
	}
	switch {
	case err == io.EOF && len(line) == 0:
		return nil, false
	case err != nil && err != io.EOF:
		d.err = err
		return nil, false
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), true
}

// Event is the event Next read.
func (d *sseDecoder) Event() ssestream.Event { return d.evt }

// Close closes the stream's body.
func (d *sseDecoder) Close() error { return d.rc.Close() }

// Err is the error that ended the stream, nil at its end.
func (d *sseDecoder) Err() error { return d.err }
