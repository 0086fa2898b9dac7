package remote

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	segjson "github.com/segmentio/encoding/json"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
)

const (
	mediaJSON    = "application/json"
	mediaNDJSON  = "application/x-ndjson"
	mediaProblem = "application/problem+json"
)

// The bounds of an answer.
const (
	// MaxAnswerBytes bounds a whole answer, JSON document or stream.
	MaxAnswerBytes = 8 << 20
	// MaxStateBytes bounds a pause's state, compactly encoded: chatd
	// stores it with the pending elicitation until the user answers.
	MaxStateBytes = 64 << 10
)

// readAnswer reads a 2xx answer by its content type, or turns any other
// status into the turn's failure.
func readAnswer(resp *http.Response, emit processor.Emit) (processor.Output, error) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return processor.Output{}, statusError(resp)
	}
	body := &limitReader{r: resp.Body, n: MaxAnswerBytes}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch media {
	case mediaJSON:
		data, err := io.ReadAll(body)
		if err != nil {
			return processor.Output{}, brokenAnswer(err)
		}
		out, err := decodeAnswer(data, "")
		if err == nil && out.Text != "" {
			// One delta of the whole text, so that a streaming client's
			// deltas add up to the reply as every processor's do.
			emit(processor.Delta{Text: out.Text})
		}
		return out, err
	case mediaNDJSON:
		return readStream(body, emit)
	}
	return processor.Output{}, &processor.Error{Detail: fmt.Sprintf(
		"the remote processor answered with content type %q; want %s or %s", clip(resp.Header.Get("Content-Type"), 80), mediaJSON, mediaNDJSON)}
}

// statusError is the failure of a non-2xx answer. A problem+json answer's
// title is the processor's own word for what went wrong, written for the
// client; anything else is named by its status alone, since a stack trace
// or an HTML error page is no reading for a chat user.
func statusError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	err := fmt.Errorf("status %d: %q", resp.StatusCode, clip(string(data), 512))
	detail := fmt.Sprintf("the remote processor answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media == mediaProblem {
		var problem struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(data, &problem) == nil && strings.TrimSpace(problem.Title) != "" {
			detail = clip(printable(problem.Title), 200)
		}
	}
	return &processor.Error{Detail: detail, Err: err}
}

// answerWire is a JSON answer, and a stream's result line without its type.
type answerWire struct {
	Text          *string         `json:"text"`
	ContentBlocks json.RawMessage `json:"content_blocks"`
	Meta          json.RawMessage `json:"_meta"`
	Pause         *pauseWire      `json:"pause"`
}

type pauseWire struct {
	Elicitation json.RawMessage `json:"elicitation"`
	State       json.RawMessage `json:"state"`
}

// decodeAnswer decodes and checks a JSON answer; where, when not empty,
// says where it was in a stream ("line 3").
func decodeAnswer(data []byte, where string) (processor.Output, error) {
	var a answerWire
	if err := decodeStrict(data, &a); err != nil {
		return processor.Output{}, invalid(where, err)
	}
	out, err := a.output()
	if err != nil {
		return processor.Output{}, invalid(where, err)
	}
	return out, nil
}

// output checks the answer as chatd checks every processor's output and
// returns it, or a *blocks.ValidationError naming every fault.
func (a *answerWire) output() (processor.Output, error) {
	var ve blocks.ValidationError
	var out processor.Output
	if a.Text == nil {
		ve.Add("text", "is required (it may be empty)")
	} else {
		out.Text = *a.Text
	}
	if isSet(a.ContentBlocks) {
		list, err := blocks.DecodeList(a.ContentBlocks, "content_blocks")
		ve.Merge(err)
		out.Blocks = list
	}
	out.Meta = decodeMeta(a.Meta, "_meta", &ve)
	if a.Pause != nil {
		out.Pause = a.Pause.pause(&ve)
	}
	return out, ve.Err()
}

// pause checks a pause: its elicitation is built as every processor's is,
// through internal/elicit, which applies the requestedSchema restriction,
// keeps the elicitation's _meta and gives it a fresh ID.
func (w *pauseWire) pause(ve *blocks.ValidationError) *processor.Pause {
	if !isSet(w.Elicitation) {
		ve.Add("pause.elicitation", "is required")
		return nil
	}
	req, err := elicit.ParseParams(w.Elicitation)
	mergeUnder(ve, "pause.elicitation", err)
	state := []byte("null")
	if isSet(w.State) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, w.State); err != nil {
			ve.Add("pause.state", err.Error())
		}
		state = buf.Bytes()
	}
	if len(state) > MaxStateBytes {
		ve.Add("pause.state", fmt.Sprintf("is %d bytes encoded; at most %d are allowed", len(state), MaxStateBytes))
	}
	return &processor.Pause{Request: req, State: state}
}

// decodeMeta decodes a _meta object, numbers kept as written, and checks
// its keys: the grammar, and none of the keys with which chatd alone
// records the elicitation protocol in history.
func decodeMeta(raw json.RawMessage, path string, ve *blocks.ValidationError) map[string]any {
	if !isSet(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var meta map[string]any
	if dec.Decode(&meta) != nil {
		ve.Add(path, "must be an object, not "+blocks.KindOf(raw))
		return nil
	}
	ve.Merge(blocks.ValidateMeta(meta, path))
	for key := range meta {
		if blocks.IsRecordKey(key) {
			ve.Add(fmt.Sprintf("%s[%q]", path, key), "is written by chatd only")
		}
	}
	return meta
}

// decodeStrict is decodeFields for what chatd stores, which must also come
// back exactly as it was sent (blocks.CheckExact).
func decodeStrict(data []byte, v any) error {
	if err := blocks.CheckExact(data); err != nil {
		return err
	}
	return decodeFields(data, v)
}

// decodeFields decodes one JSON value into v, refusing unknown fields: a
// misspelt content_blocks would otherwise drop the blocks without a word.
// segmentio's decoder reads the same JSON into the same types as
// encoding/json, with its errors, in about a third of the time, and a
// streamed answer is a line to decode for every delta.
func decodeFields(data []byte, v any) error {
	rest, err := segjson.Parse(data, v, segjson.DisallowUnknownFields)
	if err != nil {
		return describeDecodeError(err)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("data after the JSON value")
	}
	return nil
}

func describeDecodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return fmt.Errorf("must be a JSON object, not %s", withArticle(kindOf(typeErr.Value)))
		}
		want := "an object"
		if typeErr.Type.Kind() == reflect.String {
			want = "a string"
		}
		return blocks.FieldError{Field: typeErr.Field, Detail: "must be " + want + ", not " + withArticle(kindOf(typeErr.Value))}
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return blocks.FieldError{Field: strings.Trim(field, `"`), Detail: "unknown field"}
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// kindOf names the kind of JSON value a type error is about: segmentio's
// errors carry the input from the offending value on, quoted, where
// encoding/json's name the kind.
func kindOf(value string) string {
	input, err := strconv.Unquote(value)
	if err != nil {
		return value
	}
	switch strings.TrimSpace(input + " ")[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func withArticle(kind string) string {
	if kind == "array" || kind == "object" {
		return "an " + kind
	}
	return "a " + kind
}

// invalid is the failure of an answer that is not what chatd accepts.
func invalid(where string, err error) error {
	prefix := "the remote processor's answer is invalid: "
	if where != "" {
		prefix += where + ": "
	}
	return &processor.Error{Detail: clip(prefix+err.Error(), 1000), Err: err}
}

// brokenAnswer is the failure of an answer that could not be read whole.
func brokenAnswer(err error) error {
	if errors.Is(err, errTooLarge) {
		return &processor.Error{Detail: fmt.Sprintf("the remote processor's answer is larger than %d MiB", MaxAnswerBytes>>20), Err: err}
	}
	return &processor.Error{Detail: "the remote processor's answer broke off before its end", Err: err}
}

func mergeUnder(ve *blocks.ValidationError, prefix string, err error) {
	var sub *blocks.ValidationError
	if !errors.As(err, &sub) {
		ve.Merge(err)
		return
	}
	for _, fe := range sub.Errors {
		ve.Add(blocks.JoinPath(prefix, fe.Field), fe.Detail)
	}
}

func isSet(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// printable replaces control characters with spaces, so a processor's
// title reads as one line in a problem's detail and in logs.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
}

var errTooLarge = errors.New("answer too large")

// limitReader reads at most n bytes of r, then fails with errTooLarge if
// r has more.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	if l.n -= int64(n); l.n < 0 {
		return 0, errTooLarge
	}
	return n, err
}
