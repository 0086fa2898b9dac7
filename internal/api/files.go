package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"chatd/internal/blocks"
	"chatd/internal/filetype"
	"chatd/internal/protocol"
	"chatd/internal/store"
)

// FileStore is what the file endpoints need of the store; internal/store's
// Memory and Redis provide it. Errors are store's sentinels, wrapped.
type FileStore interface {
	// PutFile stores a file of the principal's thread, which may keep data
	// itself: store.ErrNotFound, ErrFileQuotaExceeded, ErrFull.
	PutFile(ctx context.Context, principal string, f store.File, data []byte) error
	// CreateFile begins a file of the principal's thread whose bytes are
	// still to arrive (see store.FileUpload): store.ErrNotFound,
	// ErrFileQuotaExceeded, ErrFull, here or at Commit.
	CreateFile(ctx context.Context, principal string, f store.File) (store.FileUpload, error)
	// StatFile returns a file's record: store.ErrFileNotFound.
	StatFile(ctx context.Context, threadID, principal, fileID string) (store.File, error)
	// OpenFile returns a file and a reader of its bytes, which may fetch
	// them as they are read: store.ErrFileNotFound.
	OpenFile(ctx context.Context, threadID, principal, fileID string) (store.File, io.ReadSeeker, error)
	// DeleteFile removes a file: store.ErrFileNotFound.
	DeleteFile(ctx context.Context, threadID, principal, fileID string) error
}

// FileURIPrefix starts the URI that names a stored file in a resource_link
// block: chatd:file/<id>.
const FileURIPrefix = "chatd:file/"

// fileView is a stored file on the wire.
type fileView struct {
	ID        string           `json:"id"`
	Name      string           `json:"name"`
	MIMEType  string           `json:"mime_type"`
	Size      int64            `json:"size"`
	SHA256    string           `json:"sha256"`
	CreatedAt blocks.Timestamp `json:"created_at"`
	URI       string           `json:"uri"`
}

func newFileView(f store.File) fileView {
	return fileView{ID: f.ID, Name: f.Name, MIMEType: f.MIMEType, Size: f.Size, SHA256: f.SHA256,
		CreatedAt: blocks.Timestamp(f.CreatedAt), URI: FileURIPrefix + f.ID}
}

// multipartSlack is what a multipart upload may carry beyond its file:
// boundaries, part headers and small fields.
const multipartSlack = 64 << 10

// upload is a file as a request carries it: whole, or (a raw body of known
// length) its size and first bytes, the rest still to arrive.
type upload struct {
	name     string
	declared string      // the type the client declared; "" for none
	data     []byte      // the file; with rest, its first bytes (filetype.SniffLen at most)
	sum      []byte      // data's SHA-256 when it was hashed as it arrived; nil if not
	rest     *bodyReader // the bytes after data, still to arrive; nil when data is the file
	size     int64       // the file's size, with rest
}

// length is the upload's size in bytes.
func (up upload) length() int64 {
	if up.rest == nil {
		return int64(len(up.data))
	}
	return up.size
}

// handleUploadFile stores a file: POST /v1/threads/{thread_id}/files, a
// multipart/form-data body with one part named file, or the file itself as
// the body with its Content-Type and ?name=.
func (s *Server) handleUploadFile(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	up, err := readUpload(w, r, s.cfg.MaxFileBytes)
	if err != nil {
		return err
	}
	f, err := s.storeFile(r.Context(), id, principalFrom(r.Context()), up)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/threads/"+id+"/files/"+f.ID)
	return writeJSON(w, http.StatusCreated, jsonType, newFileView(f))
}

// storeFile checks an upload's size, name and type and keeps it as a file
// of the thread; the type is judged from the first bytes, before the rest
// arrive.
func (s *Server) storeFile(ctx context.Context, threadID, principal string, up upload) (store.File, error) {
	if up.length() > s.cfg.MaxFileBytes {
		return store.File{}, fileTooLarge(s.cfg.MaxFileBytes)
	}
	name, err := cleanFileName(up.name)
	if err != nil {
		return store.File{}, err
	}
	typ, err := filetype.Resolve(up.declared, up.data)
	if err != nil {
		verr := &blocks.ValidationError{}
		verr.Add("file", fmt.Sprintf("the file's bytes are not %s; declare the type they are, or none", up.declared))
		return store.File{}, verr
	}
	f := store.File{ID: blocks.NewID(), ThreadID: threadID, Name: name, MIMEType: typ, Size: up.length(),
		CreatedAt: blocks.Now()}
	if up.rest != nil {
		return s.streamFile(ctx, principal, f, up)
	}
	sum := up.sum
	if sum == nil {
		full := sha256.Sum256(up.data)
		sum = full[:]
	}
	f.SHA256 = hex.EncodeToString(sum)
	if err := s.store.PutFile(ctx, principal, f, up.data); err != nil {
		return store.File{}, err
	}
	return f, nil
}

// streamFile stores a file whose bytes are still arriving: they go on to
// the store as they come, which hashes them and may send them on while the
// next arrive, so the file is stored about when its last byte has arrived.
func (s *Server) streamFile(ctx context.Context, principal string, f store.File, up upload) (store.File, error) {
	fu, err := s.store.CreateFile(ctx, principal, f)
	if err != nil {
		return store.File{}, err
	}
	defer fu.Abort()
	if _, err := fu.ReadFrom(io.MultiReader(bytes.NewReader(up.data), up.rest)); err != nil {
		if up.rest.err != nil {
			return store.File{}, bodyReadError(up.rest.err, up.size)
		}
		return store.File{}, err
	}
	return fu.Commit(ctx)
}

func fileTooLarge(limit int64) error {
	return errorf(http.StatusRequestEntityTooLarge, "payload_too_large", "the file exceeds %d bytes", limit)
}

// readUpload reads the file a request uploads, bounded by maxFile bytes of
// file (413 beyond). A raw body of known length is read only as far as its
// type needs: the rest is left to arrive as it is stored.
func readUpload(w http.ResponseWriter, r *http.Request, maxFile int64) (upload, error) {
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil && r.Header.Get("Content-Type") != "" {
		return upload{}, errorf(http.StatusBadRequest, "invalid_request", "Content-Type: %v", err)
	}
	if mediaType == "multipart/form-data" {
		body := &bodyReader{r: http.MaxBytesReader(w, r.Body, maxFile+multipartSlack)}
		up, err := readMultipartUpload(body, params["boundary"], maxFile, r.ContentLength)
		if err != nil && body.err != nil {
			return upload{}, bodyReadError(body.err, maxFile+multipartSlack)
		}
		return up, err
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		return upload{}, errorf(http.StatusBadRequest, "invalid_request",
			"name: required; upload a file as multipart/form-data with a part named file, or as the body with ?name=")
	}
	declared := r.Header.Get("Content-Type")
	if r.ContentLength >= 0 {
		if r.ContentLength > maxFile {
			return upload{}, fileTooLarge(maxFile)
		}
		body := &bodyReader{r: http.MaxBytesReader(w, r.Body, r.ContentLength)}
		head := make([]byte, min(r.ContentLength, filetype.SniffLen))
		if _, err := io.ReadFull(body, head); err != nil {
			return upload{}, bodyReadError(err, r.ContentLength)
		}
		return upload{name: name, declared: declared, data: head, rest: body, size: r.ContentLength}, nil
	}
	data, sum, err := readAtMost(http.MaxBytesReader(w, r.Body, maxFile+1), maxFile+1, r.ContentLength)
	if err != nil {
		return upload{}, bodyReadError(err, maxFile)
	}
	if int64(len(data)) > maxFile {
		return upload{}, fileTooLarge(maxFile)
	}
	return upload{name: name, declared: declared, data: data, sum: sum}, nil
}

// bodyReader remembers the error its request body failed with, so a
// multipart parser's complaint can be told from a body that did not arrive.
// It also counts the bytes read, so what a multipart body carries besides
// its file can be bounded.
type bodyReader struct {
	r   io.Reader
	n   int64
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// readMultipartUpload reads a multipart/form-data body: exactly one part
// named file; other fields are skipped.
func readMultipartUpload(body *bodyReader, boundary string, maxFile, sizeHint int64) (upload, error) {
	if boundary == "" {
		return upload{}, errorf(http.StatusBadRequest, "invalid_request", "Content-Type: multipart/form-data needs a boundary")
	}
	mr := multipart.NewReader(body, boundary)
	var up *upload
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return upload{}, errorf(http.StatusBadRequest, "invalid_request", "malformed multipart body: %v", err)
		}
		overhead := body.n
		if up != nil {
			overhead -= int64(len(up.data))
		}
		if overhead > multipartSlack {
			return upload{}, errorf(http.StatusBadRequest, "invalid_request",
				"the multipart body's headers and fields exceed %d bytes", multipartSlack)
		}
		if part.FormName() != "file" {
			if _, err := io.Copy(io.Discard, part); err != nil {
				return upload{}, errorf(http.StatusBadRequest, "invalid_request", "malformed multipart body: %v", err)
			}
			continue
		}
		if up != nil {
			return upload{}, errorf(http.StatusBadRequest, "invalid_request", "one part named file per upload")
		}
		data, sum, err := readAtMost(part, maxFile+1, sizeHint)
		if err != nil {
			return upload{}, errorf(http.StatusBadRequest, "invalid_request", "malformed multipart body: %v", err)
		}
		if int64(len(data)) > maxFile {
			return upload{}, fileTooLarge(maxFile)
		}
		up = &upload{name: part.FileName(), declared: part.Header.Get("Content-Type"), data: data, sum: sum}
		if up.name == "" {
			up.name = "file"
		}
	}
	if up == nil {
		return upload{}, errorf(http.StatusBadRequest, "invalid_request", "the multipart body has no part named file")
	}
	return *up, nil
}

// readAtMost reads up to limit bytes of r into a buffer sized from hint
// (the request's Content-Length, -1 when unknown), so a file of known size
// is read with one allocation and no copy, and returns their SHA-256 too:
// each piece is hashed as it arrives, while the client sends the next,
// rather than the whole file after the last.
func readAtMost(r io.Reader, limit, hint int64) ([]byte, []byte, error) {
	if hint < 0 || hint > limit {
		hint = min(limit, 64<<10)
	}
	var buf bytes.Buffer
	buf.Grow(int(hint) + bytes.MinRead)
	h := sha256.New()
	_, err := buf.ReadFrom(io.TeeReader(io.LimitReader(r, limit), h))
	return buf.Bytes(), h.Sum(nil), err
}

// maxFileName bounds a file's name, in bytes.
const maxFileName = 255

// cleanFileName is the name a file is kept under: its last path element
// (a browser may send a path), valid UTF-8 without control characters.
func cleanFileName(name string) (string, error) {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	bad := name == "" || name == "." || name == "/" || len(name) > maxFileName || !utf8.ValidString(name) ||
		strings.ContainsFunc(name, unicode.IsControl)
	if bad {
		return "", errorf(http.StatusBadRequest, "invalid_request",
			"name: a file name of 1 to %d bytes of UTF-8 without control characters", maxFileName)
	}
	return name, nil
}

// fileID returns the path's file ID; a malformed one names no file.
func fileID(r *http.Request) (string, error) {
	id := chi.URLParam(r, "file_id")
	if !blocks.IsCanonicalID(id) {
		return "", store.ErrFileNotFound
	}
	return id, nil
}

// handleGetFile serves a file to its owner: GET
// /v1/threads/{thread_id}/files/{file_id}, with Range and conditional
// requests. The browser is told never to guess its type nor run it: only
// types shown safely (raster images, audio, video, PDF) are inline.
func (s *Server) handleGetFile(w http.ResponseWriter, r *http.Request) error {
	tid, err := threadID(r)
	if err != nil {
		return err
	}
	fid, err := fileID(r)
	if err != nil {
		return err
	}
	f, content, err := s.store.OpenFile(r.Context(), tid, principalFrom(r.Context()), fid)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", f.MIMEType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Cache-Control", "private, no-cache")
	h.Set("ETag", `"`+f.SHA256+`"`)
	disposition := "attachment"
	if filetype.Inline(f.MIMEType) {
		disposition = "inline"
	}
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": f.Name}))
	http.ServeContent(w, r, "", f.CreatedAt, content)
	return nil
}

// handleDeleteFile removes a file: DELETE
// /v1/threads/{thread_id}/files/{file_id}.
func (s *Server) handleDeleteFile(w http.ResponseWriter, r *http.Request) error {
	tid, err := threadID(r)
	if err != nil {
		return err
	}
	fid, err := fileID(r)
	if err != nil {
		return err
	}
	if err := s.store.DeleteFile(r.Context(), tid, principalFrom(r.Context()), fid); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkFileLinks refuses a message whose blocks link a chatd:file/ URI that
// is not a file of the thread (422, with each block's path): a turn may
// only hand its processor files its principal stored on that thread.
func (s *Server) checkFileLinks(ctx context.Context, threadID, principal string, list []blocks.ContentBlock, path string) error {
	verr := &blocks.ValidationError{}
	for i, b := range list {
		uri := b.URI()
		if !strings.HasPrefix(uri, FileURIPrefix) {
			continue
		}
		at := fmt.Sprintf("%s[%d].uri", path, i)
		if b.Type() == blocks.TypeResource {
			at = fmt.Sprintf("%s[%d].resource.uri", path, i)
		}
		id := strings.TrimPrefix(uri, FileURIPrefix)
		if !blocks.IsCanonicalID(id) {
			verr.Add(at, "no such file in this thread")
			continue
		}
		_, err := s.store.StatFile(ctx, threadID, principal, id)
		switch {
		case errors.Is(err, store.ErrFileNotFound):
			verr.Add(at, "no such file in this thread")
		case err != nil:
			return err
		}
	}
	return verr.Err()
}

// storeUploads stores the attachments a protocol's message carries as
// files of its thread and links each at its place in list.
func (s *Server) storeUploads(ctx context.Context, threadID string, list []blocks.ContentBlock, uploads []protocol.Upload) error {
	if len(uploads) == 0 {
		return nil
	}
	if !blocks.IsCanonicalID(threadID) {
		return store.ErrNotFound
	}
	principal := principalFrom(ctx)
	for _, u := range uploads {
		name := u.Name
		if name == "" {
			name = "attachment"
		}
		f, err := s.storeFile(ctx, threadID, principal, upload{name: name, declared: u.MediaType, data: u.Data})
		var verr *blocks.ValidationError
		if errors.As(err, &verr) {
			at := &blocks.ValidationError{}
			for _, fe := range verr.Errors {
				at.Add(u.Path, fe.Detail)
			}
			return at
		}
		if err != nil {
			return err
		}
		size := f.Size
		link, err := blocks.ResourceLink(FileURIPrefix+f.ID, f.Name, blocks.LinkOptions{MimeType: f.MIMEType, Size: &size})
		if err != nil {
			return err
		}
		list[u.Index] = link
	}
	return nil
}
