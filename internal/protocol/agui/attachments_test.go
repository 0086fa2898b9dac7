package agui_test

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/protocol"
	"chatd/internal/protocol/agui"
)

func TestDecodeRequestAttachments(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	large := bytes.Repeat([]byte{1, 2}, protocol.InlineFileBytes)
	body := `{"threadId":"0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00","runId":"r1","messages":[{"id":"m1","role":"user","content":[` +
		`{"type":"text","text":"look"},` +
		`{"type":"video","source":{"type":"data","value":"` + b64(large) + `","mimeType":"video/mp4"}},` +
		`{"type":"document","source":{"type":"data","value":"` + b64([]byte("# notes")) + `","mimeType":"text/markdown"}},` +
		`{"type":"binary","mimeType":"image/png","data":"iVBORw0KGgo=","filename":"a.png"},` +
		`{"type":"binary","mimeType":"application/pdf","url":"chatd:file/0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a01","filename":"r.pdf"}` +
		`]}]}`
	req, err := agui.DecodeRequest([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, "look", req.Text)
	require.Len(t, req.Blocks, 4)
	require.Len(t, req.Uploads, 1)
	assert.Equal(t, protocol.Upload{Index: 0, Name: "", MediaType: "video/mp4", Data: large, Path: "messages[0].content[1].source"}, req.Uploads[0])

	res, ok := req.Blocks[1].Resource()
	require.True(t, ok)
	require.NotNil(t, res.Text, "small text is an embedded text resource")
	assert.Equal(t, "# notes", *res.Text)
	assert.Equal(t, "text/markdown", res.MimeType)

	assert.Equal(t, "image", req.Blocks[2].Type())
	assert.Equal(t, "iVBORw0KGgo=", req.Blocks[2].Data())
	assert.Equal(t, "resource_link", req.Blocks[3].Type())
	assert.Equal(t, "r.pdf", req.Blocks[3].Name())
}
