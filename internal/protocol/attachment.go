package protocol

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"chatd/internal/blocks"
)

// Upload is an attachment of a protocol's message that is neither an image
// nor audio and too large to travel in a block: the API stores it as a file
// of the thread and puts a resource_link to it at the message's
// Blocks[Index], which the decoder leaves as the zero block meanwhile.
type Upload struct {
	Index     int
	Name      string
	MediaType string
	Data      []byte
	// Path names the attachment in the request, for errors.
	Path string
}

// InlineFileBytes is the size up to which an attachment that is neither an
// image nor audio becomes an embedded resource of the message; a larger one
// is stored as a file.
const InlineFileBytes = 8 << 10

// FileURIPrefix starts the URI of a stored file (chatd:file/<id>); a
// protocol's attachment that names one links it.
const FileURIPrefix = "chatd:file/"

// Attachments collects a protocol message's attachments in order: blocks,
// with a zero block where an Upload goes.
type Attachments struct {
	Blocks  []blocks.ContentBlock
	Uploads []Upload
}

// AddData adds an attachment of base64 data of mediaType named name (""
// for none): images and audio become image and audio blocks, others an
// embedded resource (text for valid UTF-8 text/*) up to InlineFileBytes,
// else an Upload. Bad data is a violation reported at path.
func (a *Attachments) AddData(name, mediaType, b64, path string) error {
	mediaType = strings.ToLower(strings.TrimSpace(strings.Split(mediaType, ";")[0]))
	if strings.HasPrefix(mediaType, "image/") && mediaType != "image/svg+xml" || strings.HasPrefix(mediaType, "audio/") {
		block, err := MediaBlock("data:"+mediaType+";base64,"+b64, mediaType, path)
		if err != nil {
			return err
		}
		a.Blocks = append(a.Blocks, block)
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		verr := &blocks.ValidationError{}
		verr.Add(path, "not valid base64 data")
		return verr
	}
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	if len(data) > InlineFileBytes {
		a.Uploads = append(a.Uploads, Upload{Index: len(a.Blocks), Name: name, MediaType: mediaType, Data: data, Path: path})
		a.Blocks = append(a.Blocks, blocks.ContentBlock{})
		return nil
	}
	uri := "attachment:" + url.PathEscape(nameOr(name))
	var block blocks.ContentBlock
	if strings.HasPrefix(mediaType, "text/") && utf8.Valid(data) {
		block, err = blocks.EmbeddedText(uri, mediaType, string(data))
	} else {
		block, err = blocks.EmbeddedBlob(uri, mediaType, b64)
	}
	if err != nil {
		verr := &blocks.ValidationError{}
		verr.Add(path, err.Error())
		return verr
	}
	a.Blocks = append(a.Blocks, block)
	return nil
}

// AddURL adds an attachment given by URL: a data: URL as AddData, or a
// chatd:file/<id> URL, a link to a stored file (checked to be the thread's
// when the turn begins). chatd fetches no other URL.
func (a *Attachments) AddURL(name, mediaType, rawURL, path string) error {
	if strings.HasPrefix(rawURL, FileURIPrefix) {
		link, err := blocks.ResourceLink(rawURL, nameOr(name), blocks.LinkOptions{MimeType: mediaType})
		if err != nil {
			verr := &blocks.ValidationError{}
			verr.Add(path, err.Error())
			return verr
		}
		a.Blocks = append(a.Blocks, link)
		return nil
	}
	urlType, b64, err := parseDataURL(rawURL)
	if err != nil {
		verr := &blocks.ValidationError{}
		verr.Add(path, fmt.Sprintf("%v, or a chatd:file/<id> URL of an uploaded file", err))
		return verr
	}
	if mediaType == "" {
		mediaType = urlType
	}
	return a.AddData(name, mediaType, b64, path)
}

// AddBytes adds an attachment's raw bytes, as AddData.
func (a *Attachments) AddBytes(name, mediaType string, data []byte, path string) error {
	return a.AddData(name, mediaType, base64.StdEncoding.EncodeToString(data), path)
}

func nameOr(name string) string {
	if name == "" {
		return "attachment"
	}
	return name
}
