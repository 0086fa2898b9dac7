package aisdk_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/protocol"
	"chatd/internal/protocol/aisdk"
)

func TestDecodeRequestFiles(t *testing.T) {
	small := []byte("%PDF-1.7 small")
	large := bytes.Repeat([]byte("x"), protocol.InlineFileBytes+1)
	part := func(mediaType, filename, url string) string {
		b, _ := json.Marshal(map[string]string{"type": "file", "mediaType": mediaType, "filename": filename, "url": url})
		return string(b)
	}
	body := chat(`{"id":"u1","role":"user","parts":[{"type":"text","text":"see"},` +
		part("application/pdf", "small.pdf", "data:application/pdf;base64,"+base64.StdEncoding.EncodeToString(small)) + `,` +
		part("text/plain", "big.txt", "data:text/plain;base64,"+base64.StdEncoding.EncodeToString(large)) + `,` +
		part("image/png", "up.png", "chatd:file/0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00") + `]}`)
	req, err := aisdk.DecodeRequest([]byte(body))
	require.NoError(t, err)
	require.Len(t, req.Blocks, 3)

	res, ok := req.Blocks[0].Resource()
	require.True(t, ok, "a small file is an embedded resource")
	assert.Equal(t, "attachment:small.pdf", res.URI)
	assert.Equal(t, "application/pdf", res.MimeType)
	require.NotNil(t, res.Blob)
	assert.Equal(t, base64.StdEncoding.EncodeToString(small), *res.Blob)

	assert.Equal(t, "", req.Blocks[1].Type(), "a large file's place waits for its link")
	require.Len(t, req.Uploads, 1)
	assert.Equal(t, protocol.Upload{Index: 1, Name: "big.txt", MediaType: "text/plain", Data: large, Path: "messages[0].parts[2].url"}, req.Uploads[0])

	assert.Equal(t, "resource_link", req.Blocks[2].Type())
	assert.Equal(t, "chatd:file/0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00", req.Blocks[2].URI())
	assert.Equal(t, "up.png", req.Blocks[2].Name())
}
