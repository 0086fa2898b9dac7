package deepchat

import (
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"sort"
	"strconv"
	"strings"

	"chatd/internal/blocks"
	"chatd/internal/protocol"
)

// Request is what a POST /v1/deep-chat asks for: a turn on the user's last
// message in the thread named by the thread_id body prop.
type Request struct {
	ThreadID string
	// Text and Blocks are the user's message: its text and the files
	// deep-chat sent (images and audio as their blocks, others as embedded
	// resources or, when large, Uploads).
	Text   string
	Blocks []blocks.ContentBlock
	// Uploads are the files to store first, each linked at its place in
	// Blocks.
	Uploads []protocol.Upload
	// Stream is whether deep-chat asked for a stream (connect.stream),
	// which it says in the Accept header: the caller sets it.
	Stream bool
}

type body struct {
	Messages []json.RawMessage `json:"messages"`
	ThreadID *string           `json:"thread_id"`
}

type message struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// DecodeJSON reads deep-chat's JSON body. It returns a *protocol.InputError
// for input it cannot use.
func DecodeJSON(data []byte) (Request, error) {
	var in body
	if err := protocol.Decode(data, &in); err != nil {
		return Request{}, protocol.Inputf("malformed deep-chat body: %s", err)
	}
	return readBody(in, protocol.Attachments{})
}

func readBody(in body, att protocol.Attachments) (Request, error) {
	files := att.Blocks
	threadID, err := protocol.ThreadID(in.ThreadID, "thread_id")
	if err != nil {
		return Request{}, protocol.Inputf("thread_id: required (give the chatd thread ID in connect.additionalBodyProps)")
	}
	out := Request{ThreadID: threadID, Blocks: files, Uploads: att.Uploads}
	if len(in.Messages) == 0 {
		if len(files) == 0 {
			return Request{}, protocol.Inputf("messages: must end with the user's message")
		}
		return out, nil
	}
	var msg message
	path, err := protocol.LastMessage(in.Messages, &msg)
	if err != nil {
		return Request{}, err
	}
	if msg.Role != "user" && len(files) > 0 {
		// deep-chat leaves a message of files alone out of the messages it
		// sends with them: the last one is the conversation's before.
		return out, nil
	}
	if msg.Role != "user" {
		return Request{}, protocol.Inputf("%s.role: the last message must be the user's", path)
	}
	out.Text = msg.Text
	return out, protocol.RequireContent(out.Text, out.Blocks, path)
}

// DecodeMultipart reads the multipart body deep-chat sends with files:
// files parts, the body props as fields, and the messages as message1,
// message2… fields of JSON. Images and audio become content blocks, other
// files embedded resources or Uploads (see protocol.Attachments). A file
// larger than maxFile bytes is an *protocol.InputError, as is anything else
// chatd cannot read; other parts are held to maxField.
func DecodeMultipart(mr *multipart.Reader, maxFile, maxField int64) (Request, error) {
	var in body
	numbered := map[int]json.RawMessage{}
	var att protocol.Attachments
	nfiles := 0
	for i := 0; ; i++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Request{}, protocol.Inputf("malformed multipart body: %s", err)
		}
		name := part.FormName()
		limit := maxField
		if name == "files" {
			limit = maxFile
		}
		data, err := io.ReadAll(io.LimitReader(part, limit+1))
		part.Close()
		if err != nil {
			return Request{}, protocol.Inputf("malformed multipart body: %s", err)
		}
		if int64(len(data)) > limit {
			return Request{}, &TooLargeError{Part: name, Limit: limit}
		}
		switch {
		case name == "files":
			if err := att.AddBytes(part.FileName(), part.Header.Get("Content-Type"), data, fmt.Sprintf("files[%d]", nfiles)); err != nil {
				return Request{}, err
			}
			nfiles++
		case name == "thread_id":
			id := string(data)
			in.ThreadID = &id
		case strings.HasPrefix(name, "message"):
			n, err := strconv.Atoi(strings.TrimPrefix(name, "message"))
			if err != nil || n < 1 {
				continue // another body prop
			}
			numbered[n] = data
		}
	}
	keys := make([]int, 0, len(numbered))
	for n := range numbered {
		keys = append(keys, n)
	}
	sort.Ints(keys)
	for _, n := range keys {
		in.Messages = append(in.Messages, numbered[n])
	}
	return readBody(in, att)
}

// TooLargeError is a multipart part over its limit.
type TooLargeError struct {
	Part  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: part larger than %d bytes", e.Part, e.Limit)
}
