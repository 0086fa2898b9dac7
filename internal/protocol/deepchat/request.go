package deepchat

import (
	"encoding/base64"
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
	// Text and Blocks are the user's message: its text and the images and
	// audio deep-chat sent as files.
	Text   string
	Blocks []blocks.ContentBlock
	// Stream is whether deep-chat asked for a stream (connect.stream),
	// which it says in the Accept header: the caller sets it.
	Stream bool
}

// UnsupportedFileError is a file deep-chat sent that cannot become a content
// block: only images and audio can.
type UnsupportedFileError struct {
	Name, MediaType string
}

func (e *UnsupportedFileError) Error() string {
	return fmt.Sprintf("file %q of type %q: only images and audio can be attached", e.Name, e.MediaType)
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
	return readBody(in, nil)
}

func readBody(in body, files []blocks.ContentBlock) (Request, error) {
	threadID, err := protocol.ThreadID(in.ThreadID, "thread_id")
	if err != nil {
		return Request{}, protocol.Inputf("thread_id: required (give the chatd thread ID in connect.additionalBodyProps)")
	}
	out := Request{ThreadID: threadID, Blocks: files}
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
// message2… fields of JSON. Images and audio become content blocks; any
// other file is an *UnsupportedFileError. A file larger than maxFile bytes
// is an *protocol.InputError, as is anything else chatd cannot read.
func DecodeMultipart(mr *multipart.Reader, maxFile int64) (Request, error) {
	var in body
	numbered := map[int]json.RawMessage{}
	var files []blocks.ContentBlock
	for i := 0; ; i++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Request{}, protocol.Inputf("malformed multipart body: %s", err)
		}
		name := part.FormName()
		data, err := io.ReadAll(io.LimitReader(part, maxFile+1))
		part.Close()
		if err != nil {
			return Request{}, protocol.Inputf("malformed multipart body: %s", err)
		}
		if int64(len(data)) > maxFile {
			return Request{}, protocol.Inputf("%s: part larger than %d bytes", name, maxFile)
		}
		switch {
		case name == "files":
			block, err := fileBlock(part.FileName(), part.Header.Get("Content-Type"), data, len(files))
			if err != nil {
				return Request{}, err
			}
			files = append(files, block)
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
	return readBody(in, files)
}

// fileBlock turns an uploaded file into an image or audio block.
func fileBlock(name, mediaType string, data []byte, i int) (blocks.ContentBlock, error) {
	mediaType = strings.ToLower(strings.TrimSpace(strings.Split(mediaType, ";")[0]))
	if !strings.HasPrefix(mediaType, "image/") && !strings.HasPrefix(mediaType, "audio/") {
		return blocks.ContentBlock{}, &UnsupportedFileError{Name: name, MediaType: mediaType}
	}
	return protocol.MediaBlock("data:"+mediaType+";base64,"+base64.StdEncoding.EncodeToString(data), mediaType, fmt.Sprintf("files[%d]", i))
}
