package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"chatd/internal/blocks"
	"chatd/internal/filetype"
	"chatd/internal/processor"
)

// The kinds of input a model may be given as more than a text summary
// (Config.Inputs).
const (
	InputImage = "image" // image blocks and image files, as image_url parts
	InputAudio = "audio" // wav and mp3, as input_audio parts
	InputFile  = "file"  // other files, as file parts; text files as their text
)

// DefaultTextFileBytes bounds the text of one text file or text resource
// given to a model.
const DefaultTextFileBytes = 100 << 10

// CheckInputs refuses a kind of input that is not image, audio or file.
func CheckInputs(inputs []string) error {
	for _, in := range inputs {
		switch in {
		case InputImage, InputAudio, InputFile:
		default:
			return fmt.Errorf("input %q: want image, audio or file", in)
		}
	}
	return nil
}

// StoredFile is a file of a thread as the agent reads it.
type StoredFile struct {
	Name     string
	MIMEType string
	Data     []byte
}

// FileReader reads the files a user message links (chatd:file/<id>
// resource_link blocks) when the turn runs, on whichever instance runs it.
type FileReader interface {
	// ReadFile returns a file of the principal's thread; an error when it
	// is gone.
	ReadFile(ctx context.Context, threadID, principal, fileID string) (StoredFile, error)
}

// fileURIPrefix starts a stored file's URI.
const fileURIPrefix = "chatd:file/"

// wirePart is one part of a user message's content.
type wirePart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ImageURL   *wireImageURL   `json:"image_url,omitempty"`
	InputAudio *wireInputAudio `json:"input_audio,omitempty"`
	File       *wireFile       `json:"file,omitempty"`
}

type wireImageURL struct {
	URL string `json:"url"`
}

type wireInputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type wireFile struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
}

// wirePartsMessage is a user message whose content is parts.
type wirePartsMessage struct {
	Role    string     `json:"role"`
	Content []wirePart `json:"content"`
}

// inputs is what an agent gives its model of a user message's blocks.
type inputs struct {
	image, audio, file bool
	textBytes          int
	files              FileReader
}

func newInputs(cfg Config) inputs {
	in := inputs{textBytes: cfg.TextFileBytes, files: cfg.Files}
	if in.textBytes <= 0 {
		in.textBytes = DefaultTextFileBytes
	}
	for _, k := range cfg.Inputs {
		switch k {
		case InputImage:
			in.image = true
		case InputAudio:
			in.audio = true
		case InputFile:
			in.file = true
		}
	}
	return in
}

func (in inputs) any() bool { return in.image || in.audio || in.file }

// userMessage is the user's message as the model sees it. With no input
// kinds enabled it is text: the message's text and a summary of its blocks.
// Otherwise each block the agent may give as itself becomes a part (read
// from the store for a linked file), the others stay summaries, and text
// files and text resources are given as their text. The message's Content
// stays the text form, which is what a pause state keeps.
func (in inputs) userMessage(ctx context.Context, pi processor.Input) message {
	m := *pi.Message
	text := messageText(m)
	if text == "" {
		text = "(empty message)"
	}
	msg := message{Role: roleUser, Content: text}
	if !in.any() || len(m.ContentBlocks) == 0 {
		return msg
	}
	var parts []wirePart
	media := false
	addText := func(s string) {
		if s == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1].Type == "text" {
			parts[n-1].Text += "\n" + s
			return
		}
		parts = append(parts, wirePart{Type: "text", Text: s})
	}
	addText(m.Text)
	for _, b := range m.ContentBlocks {
		p, ok := in.part(ctx, pi, b)
		switch {
		case ok && p.Type == "text":
			addText(p.Text)
		case ok:
			media = true
			parts = append(parts, p)
		default:
			addText(summarizeBlock(b))
		}
	}
	if !media {
		// Text only: one string, as a model without parts support reads it.
		joined := ""
		if len(parts) > 0 {
			joined = parts[0].Text
		}
		if joined != "" {
			msg.Content = joined
		}
		return msg
	}
	msg.parts = parts
	return msg
}

// part is what the model gets of one block, when more than its summary.
func (in inputs) part(ctx context.Context, pi processor.Input, b blocks.ContentBlock) (wirePart, bool) {
	switch b.Type() {
	case blocks.TypeImage:
		if in.image {
			return imagePart(b.MimeType(), b.Data()), true
		}
	case blocks.TypeAudio:
		if format := filetype.AudioFormat(b.MimeType()); in.audio && format != "" {
			return audioPart(format, b.Data()), true
		}
	case blocks.TypeResource:
		res, _ := b.Resource()
		if res.Text != nil {
			return wirePart{Type: "text", Text: fmt.Sprintf("[resource <%s>]\n%s", res.URI, in.cut(*res.Text))}, true
		}
		if res.Blob != nil {
			return in.dataPart(res.MimeType, res.URI, *res.Blob)
		}
	case blocks.TypeResourceLink:
		id, ok := strings.CutPrefix(b.URI(), fileURIPrefix)
		if !ok || in.files == nil {
			return wirePart{}, false
		}
		f, err := in.files.ReadFile(ctx, pi.ThreadID, pi.Principal, id)
		if err != nil {
			return wirePart{Type: "text", Text: fmt.Sprintf("[file %s: no longer available]", b.Name())}, true
		}
		return in.filePart(f)
	}
	return wirePart{}, false
}

// filePart is what the model gets of a stored file.
func (in inputs) filePart(f StoredFile) (wirePart, bool) {
	if filetype.IsText(f.MIMEType) && in.file {
		return wirePart{Type: "text", Text: fmt.Sprintf("[file %s (%s)]\n%s", f.Name, f.MIMEType, in.cut(string(f.Data)))}, true
	}
	return in.dataPart(f.MIMEType, f.Name, base64.StdEncoding.EncodeToString(f.Data))
}

// dataPart is the part of base64 bytes of type mimeType named name, by the
// kinds enabled.
func (in inputs) dataPart(mimeType, name, b64 string) (wirePart, bool) {
	switch {
	case filetype.IsImage(mimeType):
		if in.image {
			return imagePart(mimeType, b64), true
		}
	case filetype.AudioFormat(mimeType) != "":
		if in.audio {
			return audioPart(filetype.AudioFormat(mimeType), b64), true
		}
	case filetype.IsText(mimeType):
		if data, err := base64.StdEncoding.DecodeString(b64); err == nil && in.file && utf8.Valid(data) {
			return wirePart{Type: "text", Text: fmt.Sprintf("[file %s (%s)]\n%s", name, mimeType, in.cut(string(data)))}, true
		}
	default:
		if in.file {
			return wirePart{Type: "file", File: &wireFile{FileData: "data:" + filetype.Base(mimeType) + ";base64," + b64, Filename: name}}, true
		}
	}
	return wirePart{}, false
}

func imagePart(mimeType, b64 string) wirePart {
	return wirePart{Type: "image_url", ImageURL: &wireImageURL{URL: "data:" + filetype.Base(mimeType) + ";base64," + b64}}
}

func audioPart(format, b64 string) wirePart {
	return wirePart{Type: "input_audio", InputAudio: &wireInputAudio{Data: b64, Format: format}}
}

// cut bounds a text to textBytes, at a character's boundary, saying how
// much was left out.
func (in inputs) cut(s string) string {
	if len(s) <= in.textBytes {
		return s
	}
	n := in.textBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("\n[truncated: %d more bytes]", len(s)-n)
}

// encodeParts is a user message with parts, encoded for the request.
func encodeParts(role string, parts []wirePart) []byte {
	// Strings and pointers to structs of strings always encode.
	b, _ := json.Marshal(wirePartsMessage{Role: role, Content: parts})
	return b
}
