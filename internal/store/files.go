package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Errors of the file methods, mapped by the API like the others.
var (
	// ErrFileNotFound: the thread holds no file with that ID (or the
	// thread is not the principal's).
	ErrFileNotFound = errors.New("file not found")
	// ErrFileQuotaExceeded: the principal's files would hold more than
	// Options.FilesMaxBytes.
	ErrFileQuotaExceeded = errors.New("file quota exceeded")
)

// File is a stored file's record. A file belongs to one thread: it is
// deleted with it and lives as long as it does.
type File struct {
	ID       string
	ThreadID string
	Name     string
	MIMEType string
	Size     int64
	// SHA256 is the lowercase hex digest of the bytes.
	SHA256    string
	CreatedAt time.Time
}

// A FileUpload stores a file whose bytes arrive after its record: a store's
// CreateFile counts the file against the principal's quota and returns one,
// ReadFrom takes the bytes as they arrive (a store may send them on while
// the next arrive), and Commit lists the file once they are all there.
// Until Commit succeeds, the file is not a file of its thread; Abort, which
// is a no-op after Commit, discards what was taken and frees the quota.
type FileUpload interface {
	// ReadFrom reads the file's bytes from r until EOF; more than the
	// record's Size is an error.
	ReadFrom(r io.Reader) (int64, error)
	// Commit lists the file and returns its record, with the SHA-256 of
	// the bytes read: ErrNotFound for a thread that is not the
	// principal's, ErrFull, and ErrFileQuotaExceeded for a quota another
	// upload filled meanwhile (the embedded store counts it again).
	Commit(ctx context.Context) (File, error)
	// Abort discards the upload.
	Abort()
}

// checkUpload refuses a record a FileUpload cannot be made for: a caller's
// bug, never a client's input.
func checkUpload(f File) error {
	if f.ID == "" || f.ThreadID == "" {
		return errors.New("store: a file needs an ID and a thread")
	}
	if f.Size < 0 {
		return fmt.Errorf("store: file %s: size %d", f.ID, f.Size)
	}
	return nil
}

// errUploadTooLong ends a FileUpload's ReadFrom given more bytes than its
// record's Size.
func errUploadTooLong(f File) error {
	return fmt.Errorf("store: file %s: more than its %d bytes", f.ID, f.Size)
}

// fileRecord is how a file's record is encoded in a store.
type fileRecord struct {
	Name      string `json:"name"`
	MIMEType  string `json:"mime_type"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	CreatedAt string `json:"created_at"`
}

func encodeFile(f File) (string, error) {
	b, err := json.Marshal(fileRecord{Name: f.Name, MIMEType: f.MIMEType, Size: f.Size, SHA256: f.SHA256, CreatedAt: formatTime(f.CreatedAt)})
	return string(b), err
}

func decodeFile(threadID, fileID, s string) (File, error) {
	var rec fileRecord
	if err := json.Unmarshal([]byte(s), &rec); err != nil {
		return File{}, fmt.Errorf("store: corrupt file record %s: %w", fileID, err)
	}
	created, err := parseTime(rec.CreatedAt)
	if err != nil {
		return File{}, fmt.Errorf("store: corrupt file record %s: %w", fileID, err)
	}
	return File{ID: fileID, ThreadID: threadID, Name: rec.Name, MIMEType: rec.MIMEType, Size: rec.Size, SHA256: rec.SHA256, CreatedAt: created}, nil
}

// checkFile refuses a record whose size does not match its bytes, or that
// names no thread or ID: a caller's bug, never a client's input.
func checkFile(f File, data []byte) error {
	if err := checkUpload(f); err != nil {
		return err
	}
	if f.Size != int64(len(data)) {
		return fmt.Errorf("store: file %s: size %d for %d bytes", f.ID, f.Size, len(data))
	}
	return nil
}

// fileChunkMax is the largest piece of a file Redis holds in one hash field:
// with its string header it fills the 256 KiB allocation class exactly.
const fileChunkMax = 256<<10 - 16

// fileChunks splits size bytes into the pieces a file is stored in, so that
// each piece, with Redis's string header, fills an allocator size class (of
// jemalloc, Redis's allocator: four classes per doubling) and the file
// costs about its size in memory instead of up to 1.25× for one string
// rounded up to its class. The split depends on size only, so a reader
// knows the pieces from the record.
func fileChunks(size int64) []int64 {
	var out []int64
	for size > 0 {
		n := int64(fileChunkMax)
		if size < n {
			n = largestFitting(size)
		}
		out = append(out, n)
		size -= n
	}
	return out
}

// largestFitting is the largest piece of at most n bytes that, with its
// string header, fills an allocator class exactly; below 64 bytes the piece
// is n, whose rounding costs a few bytes at most.
func largestFitting(n int64) int64 {
	if n < 64 {
		return n
	}
	best := int64(0)
	for base := int64(64); base <= 2*fileChunkMax; base *= 2 {
		for j := int64(0); j < 4; j++ {
			class := base + j*base/4
			if piece := class - sdsOverhead(class); piece <= n && piece > best {
				best = piece
			}
		}
	}
	return best
}

// sdsOverhead is the header and terminator of a Redis string allocated in
// class bytes (its type depends on its length).
func sdsOverhead(class int64) int64 {
	switch {
	case class-4 < 1<<8:
		return 4
	case class-6 < 1<<16:
		return 6
	default:
		return 10
	}
}
