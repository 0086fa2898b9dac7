package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// memFile is a stored file and its bytes.
type memFile struct {
	file File
	data []byte
}

// memFiles are the embedded store's files, kept beside the threads (a
// thread's files go when memThread goes, through dropFiles): files[thread
// ID][file ID], and the bytes each principal keeps, against FilesMaxBytes.
// A file's bytes count against MemoryMaxBytes like a thread's.
type memFiles struct {
	files map[string]map[string]*memFile
	usage map[string]int64
}

// fileRecordOverhead is what the footprint adds to a file's bytes for its
// record.
const fileRecordOverhead = 256

func (f *memFile) footprint() int64 { return fileRecordOverhead + int64(len(f.data)) }

// PutFile stores a file of the principal's thread f.ThreadID, keeping data
// itself: the caller must not change it afterwards. It returns
// ErrNotFound for a thread that is not the principal's, ErrFileQuotaExceeded
// when the principal's files would exceed FilesMaxBytes, and ErrFull when
// the store holds MemoryMaxBytes.
func (m *Memory) PutFile(ctx context.Context, principal string, f File, data []byte) error {
	if err := checkFile(f, data); err != nil {
		return err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.admitFile(principal, f, now); err != nil {
		return err
	}
	stored := &memFile{file: f, data: data}
	if m.fs.files == nil {
		m.fs.files = make(map[string]map[string]*memFile)
		m.fs.usage = make(map[string]int64)
	}
	if m.fs.files[f.ThreadID] == nil {
		m.fs.files[f.ThreadID] = make(map[string]*memFile)
	}
	m.fs.files[f.ThreadID][f.ID] = stored
	m.fs.usage[principal] += f.Size
	m.usage.charge(stored.footprint())
	return nil
}

// StatFile returns the record of a file of the principal's thread:
// ErrFileNotFound when the thread holds no such file or is not the
// principal's.
func (m *Memory) StatFile(ctx context.Context, threadID, principal, fileID string) (File, error) {
	f, err := m.file(threadID, principal, fileID)
	if err != nil {
		return File{}, err
	}
	return f.file, nil
}

// GetFile returns a file of the principal's thread and its bytes (which the
// caller must not change): ErrFileNotFound as StatFile.
func (m *Memory) GetFile(ctx context.Context, threadID, principal, fileID string) (File, []byte, error) {
	f, err := m.file(threadID, principal, fileID)
	if err != nil {
		return File{}, nil, err
	}
	return f.file, f.data, nil
}

// OpenFile returns a file of the principal's thread and a reader of its
// bytes: ErrFileNotFound as StatFile.
func (m *Memory) OpenFile(ctx context.Context, threadID, principal, fileID string) (File, io.ReadSeeker, error) {
	f, err := m.file(threadID, principal, fileID)
	if err != nil {
		return File{}, nil, err
	}
	return f.file, bytes.NewReader(f.data), nil
}

func (m *Memory) file(threadID, principal, fileID string) (*memFile, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.owned(threadID, principal, now); err != nil {
		return nil, fmt.Errorf("store: file %s: %w", fileID, ErrFileNotFound)
	}
	f := m.fs.files[threadID][fileID]
	if f == nil {
		return nil, fmt.Errorf("store: file %s: %w", fileID, ErrFileNotFound)
	}
	return f, nil
}

// DeleteFile removes a file of the principal's thread, freeing its bytes
// from the principal's quota: ErrFileNotFound as StatFile.
func (m *Memory) DeleteFile(ctx context.Context, threadID, principal, fileID string) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.owned(threadID, principal, now); err != nil {
		return fmt.Errorf("store: file %s: %w", fileID, ErrFileNotFound)
	}
	f := m.fs.files[threadID][fileID]
	if f == nil {
		return fmt.Errorf("store: file %s: %w", fileID, ErrFileNotFound)
	}
	delete(m.fs.files[threadID], fileID)
	m.release(principal, f)
	return nil
}

// dropFiles removes every file of a thread being dropped; the caller holds
// m.mu.
func (m *Memory) dropFiles(threadID, owner string) {
	for _, f := range m.fs.files[threadID] {
		m.release(owner, f)
	}
	delete(m.fs.files, threadID)
}

// release frees a removed file's bytes; the caller holds m.mu.
func (m *Memory) release(owner string, f *memFile) {
	m.usage.release(f.footprint())
	if m.fs.usage[owner] -= f.file.Size; m.fs.usage[owner] <= 0 {
		delete(m.fs.usage, owner)
	}
}

// CreateFile begins a file of the principal's thread f.ThreadID whose
// f.Size bytes come after (see FileUpload): the embedded store takes them
// into one buffer and stores the file at Commit. The thread, the store's
// bound and the principal's quota are checked now and again at Commit:
// ErrNotFound, ErrFull, ErrFileQuotaExceeded.
func (m *Memory) CreateFile(ctx context.Context, principal string, f File) (FileUpload, error) {
	if err := checkUpload(f); err != nil {
		return nil, err
	}
	now := m.now()
	m.mu.Lock()
	err := m.admitFile(principal, f, now)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &memFileUpload{m: m, principal: principal, file: f, data: make([]byte, 0, f.Size), hash: sha256.New()}, nil
}

// admitFile returns the error storing f of f.Size bytes would fail with,
// if any: ErrNotFound, ErrFull, ErrFileQuotaExceeded. The caller holds m.mu.
func (m *Memory) admitFile(principal string, f File, now time.Time) error {
	if _, err := m.owned(f.ThreadID, principal, now); err != nil {
		return err
	}
	if err := m.usage.admitBytes(fileRecordOverhead + f.Size); err != nil {
		return err
	}
	if m.fs.usage[principal]+f.Size > m.opts.FilesMaxBytes {
		return fmt.Errorf("store: principal keeps %d bytes of files: %w", m.fs.usage[principal], ErrFileQuotaExceeded)
	}
	return nil
}

// memFileUpload is the embedded store's FileUpload.
type memFileUpload struct {
	m         *Memory
	principal string
	file      File
	data      []byte    // cap file.Size
	hash      hash.Hash // of data, each read hashed as it arrives
}

func (u *memFileUpload) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	for {
		if len(u.data) == cap(u.data) {
			// One byte more than the record's size is one too many.
			var extra [1]byte
			m, err := io.ReadFull(r, extra[:])
			if m > 0 {
				return n, errUploadTooLong(u.file)
			}
			if err == io.EOF {
				return n, nil
			}
			return n, err
		}
		m, err := r.Read(u.data[len(u.data):cap(u.data)])
		u.hash.Write(u.data[len(u.data) : len(u.data)+m])
		u.data = u.data[:len(u.data)+m]
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (u *memFileUpload) Commit(ctx context.Context) (File, error) {
	if u.data == nil {
		return File{}, errors.New("store: file upload already ended")
	}
	f := u.file
	f.SHA256 = hex.EncodeToString(u.hash.Sum(nil))
	err := u.m.PutFile(ctx, u.principal, f, u.data)
	u.data = nil
	if err != nil {
		return File{}, err
	}
	return f, nil
}

func (u *memFileUpload) Abort() { u.data = nil }
