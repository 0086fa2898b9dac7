package api_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/store"
)

// Bytes of a few kinds, each with its real signature.
var (
	testPNG  = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 200)...)
	testHTML = []byte("<!DOCTYPE html><html><body><script>alert(1)</script></body></html>")
	testSVG  = []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
)

type wireFile struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MIMEType  string `json:"mime_type"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	CreatedAt string `json:"created_at"`
	URI       string `json:"uri"`
}

func filesPath(threadID string) string { return "/v1/threads/" + threadID + "/files" }

func filePath(threadID, fileID string) string { return filesPath(threadID) + "/" + fileID }

// multipartPart is one part of a multipart body.
type multipartPart struct {
	field, filename, contentType string
	data                         []byte
}

// newMultipart encodes parts as a multipart/form-data body and returns it
// with its Content-Type.
func newMultipart(tb testing.TB, parts ...multipartPart) ([]byte, string) {
	tb.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		disposition := fmt.Sprintf(`form-data; name=%q`, p.field)
		if p.filename != "" {
			disposition += fmt.Sprintf(`; filename=%q`, p.filename)
		}
		h.Set("Content-Disposition", disposition)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, err := mw.CreatePart(h)
		require.NoError(tb, err)
		_, err = w.Write(p.data)
		require.NoError(tb, err)
	}
	require.NoError(tb, mw.Close())
	return buf.Bytes(), mw.FormDataContentType()
}

// uploadMultipart uploads data as the file part of a multipart body.
func (ts *testServer) uploadMultipart(tb testing.TB, as, threadID, name, contentType string, data []byte) *testResponse {
	tb.Helper()
	body, ct := newMultipart(tb, multipartPart{field: "file", filename: name, contentType: contentType, data: data})
	return ts.do(tb, testRequest{method: http.MethodPost, path: filesPath(threadID), as: as, body: body, contentType: ct})
}

// uploadRaw uploads data as the body.
func (ts *testServer) uploadRaw(tb testing.TB, as, threadID, name, contentType string, data []byte) *testResponse {
	tb.Helper()
	r := testRequest{method: http.MethodPost, path: filesPath(threadID) + "?name=" + name, as: as, body: data, contentType: contentType}
	if contentType == "" {
		r.noContentType = true
	}
	return ts.do(tb, r)
}

func (ts *testServer) mustUpload(tb testing.TB, as, threadID, name, contentType string, data []byte) wireFile {
	tb.Helper()
	resp := ts.uploadMultipart(tb, as, threadID, name, contentType, data)
	mustStatus(tb, resp, http.StatusCreated)
	f := mustDecode[wireFile](tb, resp.Body)
	require.Equal(tb, filePath(threadID, f.ID), resp.Header.Get("Location"))
	return f
}

func TestFileRoundTrip(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		th := ts.mustCreateThread(t, alice, "echo")

		f := ts.mustUpload(t, alice, th, "shot.png", "image/png", testPNG)
		sum := sha256.Sum256(testPNG)
		assert.Equal(t, "shot.png", f.Name)
		assert.Equal(t, "image/png", f.MIMEType)
		assert.Equal(t, int64(len(testPNG)), f.Size)
		assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256)
		assert.Equal(t, "chatd:file/"+f.ID, f.URI)

		got := ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice})
		mustStatus(t, got, http.StatusOK)
		assert.Equal(t, testPNG, got.Body)
		assert.Equal(t, "image/png", got.Header.Get("Content-Type"))
		assert.Equal(t, "nosniff", got.Header.Get("X-Content-Type-Options"))
		assert.Equal(t, "sandbox", got.Header.Get("Content-Security-Policy"))
		assert.Equal(t, `inline; filename=shot.png`, got.Header.Get("Content-Disposition"))
		etag := got.Header.Get("ETag")
		assert.Equal(t, `"`+f.SHA256+`"`, etag)

		notModified := ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice,
			header: http.Header{"If-None-Match": {etag}}})
		mustStatus(t, notModified, http.StatusNotModified)
		assert.Empty(t, notModified.Body)

		part := ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice,
			header: http.Header{"Range": {"bytes=8-15"}}})
		mustStatus(t, part, http.StatusPartialContent)
		assert.Equal(t, testPNG[8:16], part.Body)
		assert.Equal(t, fmt.Sprintf("bytes 8-15/%d", len(testPNG)), part.Header.Get("Content-Range"))

		mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: filePath(th, f.ID), as: alice}), http.StatusNoContent)
		mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice}), http.StatusNotFound, "not_found")
		mustProblem(t, ts.do(t, testRequest{method: http.MethodDelete, path: filePath(th, f.ID), as: alice}), http.StatusNotFound, "not_found")
	})
}

// TestFileDownloadAcrossPieces downloads a file larger than Redis keeps in
// one piece, whole and in ranges that start, end and straddle pieces' edges.
func TestFileDownloadAcrossPieces(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		th := ts.mustCreateThread(t, alice, "echo")
		data := make([]byte, 700<<10)
		_, err := rand.Read(data)
		require.NoError(t, err)
		f := ts.mustUpload(t, alice, th, "big.bin", "application/octet-stream", data)

		whole := ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice})
		mustStatus(t, whole, http.StatusOK)
		assert.True(t, bytes.Equal(data, whole.Body), "the whole file")
		const piece = 256<<10 - 16
		for _, r := range [][2]int{{0, piece - 1}, {piece - 1, piece}, {piece, 2*piece + 10}, {len(data) - 5, len(data) - 1}} {
			part := ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice,
				header: http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", r[0], r[1])}}})
			mustStatus(t, part, http.StatusPartialContent)
			assert.True(t, bytes.Equal(data[r[0]:r[1]+1], part.Body), "bytes %d-%d", r[0], r[1])
		}
	})
}

func TestFileRawUploadAndDisposition(t *testing.T) {
	ts := newTestServer(t)
	th := ts.mustCreateThread(t, alice, "echo")
	tests := []struct {
		name, declared string
		data           []byte
		wantType       string
		wantInline     bool
	}{
		{"pic.svg", "image/svg+xml", testSVG, "image/svg+xml", false},
		{"page.html", "text/html", testHTML, "text/html", false},
		{"notes.txt", "", []byte("plain notes\n"), "text/plain; charset=utf-8", false},
		{"doc.pdf", "", []byte("%PDF-1.7\n%\xe2\xe3\n1 0 obj\n<<>>\nendobj\n"), "application/pdf", true},
		{"shot.png", "application/octet-stream", testPNG, "image/png", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.uploadRaw(t, alice, th, tt.name, tt.declared, tt.data)
			mustStatus(t, resp, http.StatusCreated)
			f := mustDecode[wireFile](t, resp.Body)
			assert.Equal(t, tt.wantType, f.MIMEType)
			sum := sha256.Sum256(tt.data)
			assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256)
			got := ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice})
			mustStatus(t, got, http.StatusOK)
			assert.Equal(t, tt.data, got.Body)
			want := "attachment; filename=" + tt.name
			if tt.wantInline {
				want = "inline; filename=" + tt.name
			}
			assert.Equal(t, want, got.Header.Get("Content-Disposition"))
			assert.Equal(t, "nosniff", got.Header.Get("X-Content-Type-Options"))
		})
	}
}

func TestFileTypeContradicted(t *testing.T) {
	ts := newTestServer(t)
	th := ts.mustCreateThread(t, alice, "echo")
	p := mustProblem(t, ts.uploadMultipart(t, alice, th, "x.png", "image/png", testHTML), http.StatusUnprocessableEntity, "validation_failed")
	assert.Equal(t, []string{"file"}, p.fields())
	mustProblem(t, ts.uploadRaw(t, alice, th, "x.png", "image/png", testHTML), http.StatusUnprocessableEntity, "validation_failed")
	mustProblem(t, ts.uploadRaw(t, alice, th, "x.txt", "text/plain", testPNG), http.StatusUnprocessableEntity, "validation_failed")
}

func TestFileTenancy(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		th := ts.mustCreateThread(t, alice, "echo")
		other := ts.mustCreateThread(t, alice, "echo")
		bobs := ts.mustCreateThread(t, bob, "echo")
		f := ts.mustUpload(t, alice, th, "a.png", "", testPNG)

		mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: bob}), http.StatusNotFound, "not_found")
		mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: filePath(other, f.ID), as: alice}), http.StatusNotFound, "not_found")
		mustProblem(t, ts.do(t, testRequest{method: http.MethodDelete, path: filePath(th, f.ID), as: bob}), http.StatusNotFound, "not_found")
		mustProblem(t, ts.uploadMultipart(t, bob, th, "b.png", "", testPNG), http.StatusNotFound, "not_found")
		mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, "not-an-id"), as: alice}), http.StatusNotFound, "not_found")

		link := func(threadID, as string) *testResponse {
			return ts.do(t, testRequest{method: http.MethodPost, path: turnPath(threadID), as: as, body: mustJSON(t, map[string]any{
				"message": "what is this?",
				"content_blocks": []map[string]any{{"type": "resource_link", "uri": f.URI, "name": f.Name,
					"mimeType": f.MIMEType, "size": f.Size}},
			})})
		}
		p := mustProblem(t, link(other, alice), http.StatusUnprocessableEntity, "validation_failed")
		assert.Equal(t, []string{"content_blocks[0].uri"}, p.fields())
		mustProblem(t, link(bobs, bob), http.StatusUnprocessableEntity, "validation_failed")
		assert.Len(t, ts.mustHistory(t, alice, other), 0, "a refused turn keeps nothing")
		mustStatus(t, link(th, alice), http.StatusOK)
	})
}

func TestFileLimits(t *testing.T) {
	const maxFile = 3 << 20
	ts := newTestServer(t, withConfig(func(c *api.Config) {
		c.MaxFileBytes = maxFile
		c.MaxBodyBytes = 64 << 10 // a file is not held to the JSON body limit
	}))
	th := ts.mustCreateThread(t, alice, "echo")
	exact := bytes.Repeat([]byte("a"), maxFile)
	mustStatus(t, ts.uploadMultipart(t, alice, th, "big.txt", "text/plain", exact), http.StatusCreated)
	mustStatus(t, ts.uploadRaw(t, alice, th, "big.txt", "text/plain", exact), http.StatusCreated)
	over := append(exact, 'a')
	mustProblem(t, ts.uploadMultipart(t, alice, th, "big.txt", "text/plain", over), http.StatusRequestEntityTooLarge, "payload_too_large")
	mustProblem(t, ts.uploadRaw(t, alice, th, "big.txt", "text/plain", over), http.StatusRequestEntityTooLarge, "payload_too_large")
}

func TestFileQuota(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		opts := testStoreOpts
		opts.FilesMaxBytes = 1000
		ts := newTestServer(t, withStore(newTestStoreWith(t, kind, opts)))
		th := ts.mustCreateThread(t, alice, "echo")
		other := ts.mustCreateThread(t, alice, "echo")
		data := bytes.Repeat([]byte("q"), 600)
		f := ts.mustUpload(t, alice, th, "a.txt", "text/plain", data)
		p := mustProblem(t, ts.uploadMultipart(t, alice, other, "b.txt", "text/plain", data), http.StatusForbidden, "quota_exceeded")
		assert.Contains(t, p.Detail, "files")

		mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: filePath(th, f.ID), as: alice}), http.StatusNoContent)
		ts.mustUpload(t, alice, other, "b.txt", "text/plain", data)
		mustProblem(t, ts.uploadMultipart(t, alice, th, "c.txt", "text/plain", data), http.StatusForbidden, "quota_exceeded")

		// A thread's deletion deletes its files and frees their bytes.
		mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: "/v1/threads/" + other, as: alice}), http.StatusNoContent)
		ts.mustUpload(t, alice, th, "c.txt", "text/plain", data)
	})
}

func TestFileStoreFull(t *testing.T) {
	opts := testStoreOpts
	opts.MemoryMaxBytes = 256 << 10
	ts := newTestServer(t, withStore(store.NewMemory(opts)))
	th := ts.mustCreateThread(t, alice, "echo")
	mustProblem(t, ts.uploadRaw(t, alice, th, "big.bin", "", bytes.Repeat([]byte{0, 1}, 200<<10)), http.StatusInsufficientStorage, "store_full")
}

func TestFileThreadDeletion(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		th := ts.mustCreateThread(t, alice, "echo")
		f := ts.mustUpload(t, alice, th, "a.png", "", testPNG)
		mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: "/v1/threads/" + th, as: alice}), http.StatusNoContent)
		mustProblem(t, ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice}), http.StatusNotFound, "not_found")
	})
}

// TestFileMalformedUploads: no malformed upload is a server error.
func TestFileMalformedUploads(t *testing.T) {
	ts := newTestServer(t)
	th := ts.mustCreateThread(t, alice, "echo")
	whole, ct := newMultipart(t, multipartPart{field: "file", filename: "a.png", data: testPNG})
	noFile, noFileCT := newMultipart(t, multipartPart{field: "other", data: []byte("x")})
	two, twoCT := newMultipart(t, multipartPart{field: "file", filename: "a", data: []byte("a")},
		multipartPart{field: "file", filename: "b", data: []byte("b")})
	boundary := strings.TrimPrefix(ct, "multipart/form-data; boundary=")
	huge := []byte("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\nX-Pad: " +
		strings.Repeat("h", 200<<10) + "\r\n\r\nabc\r\n--" + boundary + "--\r\n")
	tests := []struct {
		name        string
		body        []byte
		contentType string
		path        string
	}{
		{"truncated", whole[:len(whole)/2], ct, ""},
		{"no file part", noFile, noFileCT, ""},
		{"two file parts", two, twoCT, ""},
		{"huge header", huge, ct, ""},
		{"no boundary", whole, "multipart/form-data", ""},
		{"bad content type", whole, "multipart/form-data; boundary=\"", ""},
		{"raw without name", testPNG, "image/png", filesPath(th)},
		{"name with control", testPNG, "image/png", filesPath(th) + "?name=a%00b"},
		{"name too long", testPNG, "image/png", filesPath(th) + "?name=" + strings.Repeat("n", 256)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = filesPath(th)
			}
			resp := ts.do(t, testRequest{method: http.MethodPost, path: path, as: alice, body: tt.body, contentType: tt.contentType})
			assert.True(t, resp.Status >= 400 && resp.Status < 500, "status %d: %s", resp.Status, resp.Body)
		})
	}
}

// TestFileUploadWays uploads the same file, larger than Redis keeps in one
// piece, in each way a client can: multipart, raw of known length (stored
// as it arrives) and raw chunked. Each stores the same record and bytes.
// A raw upload of known length that fails (its type contradicted, over the
// quota, on another's thread, its body cut short) leaves nothing behind.
func TestFileUploadWays(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		data := append(bytes.Clone(testPNG), make([]byte, 700<<10)...)
		_, err := rand.Read(data[len(testPNG):])
		require.NoError(t, err)
		opts := testStoreOpts
		opts.FilesMaxBytes = int64(len(data))
		ts := newTestServer(t, withStore(newTestStoreWith(t, kind, opts)))
		th := ts.mustCreateThread(t, alice, "echo")
		sum := sha256.Sum256(data)

		chunked := func() *testResponse {
			// A body the client does not know the length of (not a
			// bytes.Reader) goes chunked.
			body := io.MultiReader(bytes.NewReader(data[:1000]), bytes.NewReader(data[1000:]))
			req, err := http.NewRequest(http.MethodPost, ts.URL+filesPath(th)+"?name=shot.png", body)
			require.NoError(t, err)
			req.Header.Set(principalHeader, alice)
			req.Header.Set("Content-Type", "image/png")
			resp, err := ts.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return &testResponse{Status: resp.StatusCode, Header: resp.Header, Body: got}
		}
		ways := map[string]func() *testResponse{
			"multipart": func() *testResponse { return ts.uploadMultipart(t, alice, th, "shot.png", "image/png", data) },
			"raw":       func() *testResponse { return ts.uploadRaw(t, alice, th, "shot.png", "image/png", data) },
			"chunked":   chunked,
		}
		for _, way := range []string{"multipart", "raw", "chunked"} {
			resp := ways[way]()
			mustStatus(t, resp, http.StatusCreated)
			f := mustDecode[wireFile](t, resp.Body)
			assert.Equal(t, "shot.png", f.Name, way)
			assert.Equal(t, "image/png", f.MIMEType, way)
			assert.EqualValues(t, len(data), f.Size, way)
			assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256, way)
			got := ts.do(t, testRequest{method: http.MethodGet, path: filePath(th, f.ID), as: alice})
			mustStatus(t, got, http.StatusOK)
			assert.True(t, bytes.Equal(data, got.Body), "%s: the bytes downloaded are the bytes uploaded", way)
			mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: filePath(th, f.ID), as: alice}), http.StatusNoContent)
		}

		// quotaWhole checks that no failed upload kept any of the quota
		// (nor, then, any bytes): the whole file fits again.
		quotaWhole := func(t *testing.T) {
			t.Helper()
			var f wireFile
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				resp := ts.uploadRaw(t, alice, th, "shot.png", "image/png", data)
				if assert.Equal(c, http.StatusCreated, resp.Status) {
					f = mustDecode[wireFile](t, resp.Body)
				}
			}, 10*time.Second, 20*time.Millisecond)
			mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: filePath(th, f.ID), as: alice}), http.StatusNoContent)
		}
		html := append([]byte("<!DOCTYPE html><html><script>alert(1)</script>"), bytes.Repeat([]byte(" "), 600<<10)...)
		mustProblem(t, ts.uploadRaw(t, alice, th, "x.png", "image/png", html), http.StatusUnprocessableEntity, "validation_failed")
		quotaWhole(t)
		mustProblem(t, ts.uploadRaw(t, bob, th, "b.png", "image/png", data), http.StatusNotFound, "not_found")
		quotaWhole(t)
		kept := ts.mustUpload(t, alice, th, "a.png", "image/png", testPNG)
		mustProblem(t, ts.uploadRaw(t, alice, th, "shot.png", "image/png", data), http.StatusForbidden, "quota_exceeded")
		mustStatus(t, ts.do(t, testRequest{method: http.MethodDelete, path: filePath(th, kept.ID), as: alice}), http.StatusNoContent)
		quotaWhole(t)

		// A body cut short: the client says how long it is, sends half and
		// goes away.
		conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "POST %s?name=shot.png HTTP/1.1\r\nHost: chatd\r\n%s: %s\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n",
			filesPath(th), principalHeader, alice, len(data))
		require.NoError(t, err)
		_, err = conn.Write(data[:len(data)/2])
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		quotaWhole(t)
	})
}
