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
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A thread's files live on its slot: chatd:{T}:files, the index of its
// files (file ID → size), and chatd:{T}:file:<id>, a hash of the file's
// record (r), its number of pieces (n) and its bytes in pieces (0…n-1, see
// fileChunks); both expire with the thread, and commits refresh them with
// it. A principal's quota is a hash on the principal's slot,
// chatd:{p:<digest>}:files: "<thread ID>/<file ID>" → size, and total.

func filesIndexKey(threadID string) string { return "chatd:{" + threadID + "}:files" }

func fileKey(threadID, fileID string) string { return "chatd:{" + threadID + "}:file:" + fileID }

func fileQuotaKey(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return "chatd:{p:" + hex.EncodeToString(sum[:16]) + "}:files"
}

func quotaField(threadID, fileID string) string { return threadID + "/" + fileID }

// PutFile stores a file of the principal's thread f.ThreadID. It returns
// ErrNotFound for a thread that is not the principal's,
// ErrFileQuotaExceeded when the principal's files would exceed
// FilesMaxBytes, and ErrUnavailable.
func (r *Redis) PutFile(ctx context.Context, principal string, f File, data []byte) error {
	if err := checkFile(f, data); err != nil {
		return err
	}
	up, err := r.createFile(ctx, principal, f, nil)
	if err != nil {
		return err
	}
	defer up.Abort()
	if _, err := up.ReadFrom(bytes.NewReader(data)); err != nil {
		return err
	}
	_, err = up.Commit(ctx)
	return err
}

// CreateFile begins a file of the principal's thread f.ThreadID whose
// f.Size bytes come after (see FileUpload), counting it against the
// principal's quota now: ErrFileQuotaExceeded, ErrUnavailable. Each full
// piece (fileChunks) is hashed and sent to Redis as soon as it has
// arrived, while the next arrive, so the file is stored about when its
// last byte reaches chatd and an upload holds a few pieces in memory, not
// the file. The pieces' key expires after ThreadTTL until Commit lists the
// file, so the bytes of an upload that never ends do not stay.
func (r *Redis) CreateFile(ctx context.Context, principal string, f File) (FileUpload, error) {
	return r.createFile(ctx, principal, f, sha256.New())
}

// createFile begins an upload that hashes its bytes with h, or, with h
// nil, takes f.SHA256 as their digest.
func (r *Redis) createFile(ctx context.Context, principal string, f File, h hash.Hash) (*redisFileUpload, error) {
	if err := checkUpload(f); err != nil {
		return nil, err
	}
	if err := r.reserveFile(ctx, principal, f); err != nil {
		return nil, err
	}
	return &redisFileUpload{r: r, ctx: ctx, principal: principal, file: f, key: fileKey(f.ThreadID, f.ID), hash: h,
		slots: make(chan struct{}, piecesInFlight)}, nil
}

// An upload sends each full piece as it fills, piecesInFlight at most at
// once, and queues it for one goroutine that hashes the pieces in order,
// piecesQueued at most waiting: reading, hashing and sending run side by
// side, each piece's buffer given back once it is both hashed and sent, and
// an upload holds at most 1+piecesInFlight+piecesQueued+1 pieces.
const (
	piecesQueued   = 2
	piecesInFlight = 4
)

// A pieceBuf holds a piece: fileChunkMax bytes, and room for the CRLF
// that ends a piece read from Redis, which then reads it into the buffer
// straight from the socket.
type pieceBuf [fileChunkMax + 2]byte

// piecePool holds the buffers of uploads' and downloads' pieces: reused,
// a file's bytes cost no allocation, nor the collections that would
// follow.
var piecePool = sync.Pool{New: func() any { return new(pieceBuf) }}

// redisFileUpload is Redis's FileUpload.
type redisFileUpload struct {
	r         *Redis
	ctx       context.Context
	principal string
	file      File
	key       string
	hash      hash.Hash // nil when file.SHA256 is given

	piece   *pieceBuf // the piece being filled, or nil
	filled  int       // of piece
	full    int       // full pieces sent (or being sent)
	written int64
	ended   bool

	queue   chan *fullPiece // full pieces, to hash; nil until the first, and without hash
	hashed  chan struct{}   // closed when hashPieces has hashed the last
	slots   chan struct{}   // one per piece being sent
	senders sync.WaitGroup
	mu      sync.Mutex
	err     error // the first failed send's
}

func (u *redisFileUpload) ReadFrom(src io.Reader) (int64, error) {
	var n int64
	for {
		if err := u.sendErr(); err != nil {
			return n, err
		}
		if u.piece == nil {
			u.piece, u.filled = piecePool.Get().(*pieceBuf), 0
		}
		m, err := src.Read(u.piece[u.filled:fileChunkMax])
		u.filled += m
		u.written += int64(m)
		n += int64(m)
		if u.written > u.file.Size {
			return n, errUploadTooLong(u.file)
		}
		if u.filled == fileChunkMax {
			u.enqueue(u.piece)
			u.piece = nil
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// A fullPiece is a full piece being hashed and sent.
type fullPiece struct {
	buf   *pieceBuf
	users atomic.Int32 // of hashing and sending, those not done yet
}

// done ends one use of the piece, and the last gives its buffer back.
func (p *fullPiece) done() {
	if p.users.Add(-1) == 0 {
		piecePool.Put(p.buf)
	}
}

// enqueue sends a full piece and queues it for hashPieces, which it starts
// with the first.
func (u *redisFileUpload) enqueue(buf *pieceBuf) {
	p := &fullPiece{buf: buf}
	p.users.Store(1)
	if u.hash != nil {
		p.users.Store(2)
		if u.queue == nil {
			u.queue = make(chan *fullPiece, piecesQueued)
			u.hashed = make(chan struct{})
			go u.hashPieces()
		}
		u.queue <- p
	}
	u.send(u.full, p)
	u.full++
}

// hashPieces hashes the queued pieces, in order.
func (u *redisFileUpload) hashPieces() {
	defer close(u.hashed)
	for p := range u.queue {
		u.hash.Write(p.buf[:fileChunkMax])
		p.done()
	}
}

// send writes a full piece in the background, once fewer than
// piecesInFlight are being sent (so a fast client waits for Redis rather
// than filling chatd's memory).
func (u *redisFileUpload) send(index int, p *fullPiece) {
	u.slots <- struct{}{}
	u.senders.Add(1)
	go func() {
		defer u.senders.Done()
		_, err := u.r.client.TxPipelined(u.ctx, func(pipe redis.Pipeliner) error {
			pipe.HSet(u.ctx, u.key, strconv.Itoa(index), p.buf[:fileChunkMax])
			pipe.PExpire(u.ctx, u.key, u.r.opts.ThreadTTL)
			return nil
		})
		p.done()
		<-u.slots
		if err != nil {
			u.mu.Lock()
			if u.err == nil {
				u.err = wrapRedisError("put file", err)
			}
			u.mu.Unlock()
		}
	}()
}

func (u *redisFileUpload) sendErr() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// drain waits until every full piece is hashed and sent.
func (u *redisFileUpload) drain() {
	if u.queue != nil {
		close(u.queue)
		<-u.hashed
		u.queue = nil
	}
	u.senders.Wait()
}

// Commit waits for the full pieces and lists the file with put_file.lua,
// in one pipeline with the last pieces, those smaller than a full one.
func (u *redisFileUpload) Commit(ctx context.Context) (File, error) {
	if u.ended {
		return File{}, errors.New("store: file upload already ended")
	}
	if u.written != u.file.Size {
		return File{}, fmt.Errorf("store: file %s: %d bytes of %d", u.file.ID, u.written, u.file.Size)
	}
	u.drain()
	if err := u.sendErr(); err != nil {
		return File{}, err
	}
	var tail []byte
	if u.piece != nil {
		tail = u.piece[:u.filled]
	}
	f := u.file
	if u.hash != nil {
		u.hash.Write(tail)
		f.SHA256 = hex.EncodeToString(u.hash.Sum(nil))
	}
	record, err := encodeFile(f)
	if err != nil {
		return File{}, err
	}
	call := putFileCall{threadID: f.ThreadID, principal: u.principal, fileID: f.ID, record: record, size: f.Size}
	status, _, err := u.r.runAfter(ctx, "put file", call, func(pipe redis.Pipeliner) {
		rest := tail
		for i, n := range fileChunks(int64(len(tail))) {
			pipe.HSet(ctx, u.key, strconv.Itoa(u.full+i), rest[:n])
			rest = rest[n:]
		}
		pipe.PExpire(ctx, u.key, u.r.opts.ThreadTTL)
	})
	u.end()
	if err != nil {
		// The file may have been written; a quota entry whose file does
		// not exist is reclaimed when the quota is next reached.
		return File{}, err
	}
	switch status {
	case "OK":
		return f, nil
	case "NOTFOUND":
		u.r.unreserveFiles(context.WithoutCancel(ctx), u.principal, []string{quotaField(f.ThreadID, f.ID)})
		return File{}, fmt.Errorf("store: thread %s: %w", f.ThreadID, ErrNotFound)
	}
	return File{}, unexpectedStatus("put file", status)
}

// Abort deletes the pieces sent and frees the quota.
func (u *redisFileUpload) Abort() {
	if u.ended {
		return
	}
	u.drain()
	u.end()
	ctx := context.WithoutCancel(u.ctx)
	_ = u.r.client.Del(ctx, u.key).Err() // if this fails, the key expires after ThreadTTL
	u.r.unreserveFiles(ctx, u.principal, []string{quotaField(u.file.ThreadID, u.file.ID)})
}

// end marks the upload ended and gives back its buffer.
func (u *redisFileUpload) end() {
	u.ended = true
	if u.piece != nil {
		piecePool.Put(u.piece)
		u.piece = nil
	}
}

// runAfter runs a script after the commands before adds, in one pipeline,
// and again with the script loaded when the server did not know it (the
// commands must be safe to repeat). With Options.WaitReplicas the pipeline
// ends with WAIT, on the connection that wrote: on a Cluster the pipeline
// goes to the master of the keys' slot itself, since WAIT names no key.
func (r *Redis) runAfter(ctx context.Context, op string, c scriptCall, before func(redis.Pipeliner)) (string, []any, error) {
	n := r.opts.WaitReplicas
	var target interface {
		Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	} = r.client
	if cluster, ok := r.client.(*redis.ClusterClient); ok && n > 0 {
		node, err := cluster.MasterForKey(ctx, c.keys()[0])
		if err != nil {
			return "", nil, wrapRedisError(op, err)
		}
		target = node
	}
	s := c.script()
	var cmd, wait *redis.Cmd
	send := func() error {
		_, err := target.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			before(pipe)
			cmd = s.EvalSha(ctx, pipe, c.keys(), c.args()...)
			if n > 0 {
				wait = pipe.Do(ctx, "wait", n, r.opts.WaitTimeout.Milliseconds())
			}
			return nil
		})
		return err
	}
	err := send()
	if err != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		if err = s.Load(ctx, r.client).Err(); err == nil {
			err = send()
		}
	}
	if err != nil {
		return "", nil, wrapRedisError(op, err)
	}
	status, reply, err := splitReply(op, cmd)
	if err == nil && status == "OK" && n > 0 {
		if acked, _ := wait.Int64(); acked < int64(n) {
			return "", nil, fmt.Errorf("store: %s: %w: written on the master, acknowledged by %d of %d replicas within %s",
				op, ErrUnavailable, acked, n, r.opts.WaitTimeout)
		}
	}
	return status, reply, err
}

// reserveFile counts f against the principal's quota. A full quota may
// count files that are gone (expired with their thread, or whose deletion
// did not reach the quota): those are reclaimed and the file counted again.
func (r *Redis) reserveFile(ctx context.Context, principal string, f File) error {
	call := reserveFileCall{quota: fileQuotaKey(principal), field: quotaField(f.ThreadID, f.ID), size: f.Size,
		max: r.opts.FilesMaxBytes, ttl: r.opts.ThreadTTL}
	for attempt := 0; ; attempt++ {
		status, _, err := r.run(ctx, "count file", call)
		if err != nil {
			return err
		}
		switch {
		case status == "OK":
			return nil
		case status != "FULL":
			return unexpectedStatus("count file", status)
		case attempt > 0:
			return fmt.Errorf("store: %d bytes of files: %w", r.opts.FilesMaxBytes, ErrFileQuotaExceeded)
		}
		reclaimed, err := r.reclaimQuota(ctx, principal)
		if err != nil {
			return err
		}
		if reclaimed == 0 {
			return fmt.Errorf("store: %d bytes of files: %w", r.opts.FilesMaxBytes, ErrFileQuotaExceeded)
		}
	}
}

// reclaimQuota frees the quota entries of the principal's files that no
// longer exist and returns how many it freed.
func (r *Redis) reclaimQuota(ctx context.Context, principal string) (int, error) {
	key := fileQuotaKey(principal)
	var fields []string
	iter := r.client.HScan(ctx, key, 0, "*/*", 256).Iterator()
	for i := 0; iter.Next(ctx); i++ {
		if i%2 == 0 { // fields and values alternate
			fields = append(fields, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		return 0, wrapRedisError("count files", err)
	}
	exists := make([]*redis.IntCmd, len(fields))
	if _, err := r.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, field := range fields {
			thread, file, _ := strings.Cut(field, "/")
			exists[i] = pipe.Exists(ctx, fileKey(thread, file))
		}
		return nil
	}); err != nil {
		return 0, wrapRedisError("count files", err)
	}
	var dead []string
	for i, c := range exists {
		if c.Val() == 0 {
			dead = append(dead, fields[i])
		}
	}
	if len(dead) == 0 {
		return 0, nil
	}
	if _, _, err := r.run(ctx, "count files", unreserveFilesCall{quota: key, fields: dead}); err != nil {
		return 0, err
	}
	return len(dead), nil
}

// unreserveFiles frees the quota entries of files removed; a failure only
// leaves entries for reclaimQuota.
func (r *Redis) unreserveFiles(ctx context.Context, principal string, fields []string) {
	if len(fields) > 0 {
		_, _, _ = r.run(ctx, "count files", unreserveFilesCall{quota: fileQuotaKey(principal), fields: fields})
	}
}

// StatFile returns the record of a file of the principal's thread:
// ErrFileNotFound when the thread holds no such file or is not the
// principal's, and ErrUnavailable.
func (r *Redis) StatFile(ctx context.Context, threadID, principal, fileID string) (File, error) {
	f, _, err := r.readFile(ctx, threadID, principal, fileID, false)
	return f, err
}

// GetFile returns a file of the principal's thread and its bytes:
// ErrFileNotFound as StatFile, and ErrUnavailable.
func (r *Redis) GetFile(ctx context.Context, threadID, principal, fileID string) (File, []byte, error) {
	return r.readFile(ctx, threadID, principal, fileID, true)
}

// OpenFile returns a file of the principal's thread and a reader of its
// bytes that fetches them from Redis a piece at a time as they are read,
// the next piece while the caller writes out the last: a download's bytes
// cross from Redis to chatd while earlier ones go on to the client, and
// bytes never read (a 304, a Range) are never fetched. ErrFileNotFound as
// StatFile, and ErrUnavailable; a file deleted during the reading ends it
// with ErrFileNotFound.
func (r *Redis) OpenFile(ctx context.Context, threadID, principal, fileID string) (File, io.ReadSeeker, error) {
	f, err := r.StatFile(ctx, threadID, principal, fileID)
	if err != nil {
		return File{}, nil, err
	}
	return f, newPieceReader(ctx, r.client, f), nil
}

// pieceReader reads a file stored in pieces (fileChunks), keeping the piece
// being read and fetching the one after it in the background.
type pieceReader struct {
	ctx    context.Context
	client redis.UniversalClient
	file   File
	ends   []int64 // ends[i]: the offset just past piece i
	off    int64

	cur      []byte    // piece curIndex, or nil
	curBuf   *pieceBuf // cur's buffer, given back when cur is done with
	curIndex int
	ahead    []pendingPiece // the pieces after curIndex being fetched, in order
}

// piecesAhead is how many pieces a reader fetches ahead of the one read.
const piecesAhead = 4

type pendingPiece struct {
	index int
	got   chan fetchedPiece // room for the result: a fetch not collected ends by itself
}

type fetchedPiece struct {
	buf  *pieceBuf
	data []byte // in buf
	err  error
}

func newPieceReader(ctx context.Context, client redis.UniversalClient, f File) *pieceReader {
	var ends []int64
	var end int64
	for _, n := range fileChunks(f.Size) {
		end += n
		ends = append(ends, end)
	}
	return &pieceReader{ctx: ctx, client: client, file: f, ends: ends, curIndex: -1}
}

func (p *pieceReader) Read(b []byte) (int, error) {
	if p.off >= p.file.Size {
		return 0, io.EOF
	}
	i := sort.Search(len(p.ends), func(i int) bool { return p.ends[i] > p.off })
	if i != p.curIndex {
		p.release()
		got := p.piece(i)
		if got.err != nil {
			return 0, got.err
		}
		p.cur, p.curBuf, p.curIndex = got.data, got.buf, i
		for next := i + 1 + len(p.ahead); len(p.ahead) < piecesAhead && next < len(p.ends); next++ {
			p.fetch(next)
		}
	}
	start := p.ends[i] - int64(len(p.cur))
	n := copy(b, p.cur[p.off-start:])
	p.off += int64(n)
	if p.off >= p.file.Size {
		p.release()
	}
	return n, nil
}

// release gives back the buffer of the piece read.
func (p *pieceReader) release() {
	if p.curBuf != nil {
		piecePool.Put(p.curBuf)
	}
	p.cur, p.curBuf, p.curIndex = nil, nil, -1
}

// piece returns piece i: the first fetched ahead if it is i, or fetched now
// (after a seek, the pieces ahead are dropped).
func (p *pieceReader) piece(i int) fetchedPiece {
	if len(p.ahead) > 0 && p.ahead[0].index == i {
		got := <-p.ahead[0].got
		p.ahead = p.ahead[1:]
		return got
	}
	p.ahead = nil
	return p.get(i)
}

// fetch starts fetching piece i in the background.
func (p *pieceReader) fetch(i int) {
	got := make(chan fetchedPiece, 1)
	p.ahead = append(p.ahead, pendingPiece{i, got})
	go func() { got <- p.get(i) }()
}

// get fetches piece i into a buffer of piecePool, read into it from the
// socket. A failure is tried once more as a plain HGET, which go-redis
// retries (a buffer it reads into is not retried).
func (p *pieceReader) get(i int) fetchedPiece {
	want := p.ends[i]
	if i > 0 {
		want -= p.ends[i-1]
	}
	key, field := fileKey(p.file.ThreadID, p.file.ID), strconv.Itoa(i)
	buf := piecePool.Get().(*pieceBuf)
	cmd := redis.NewZeroCopyStringCmd(p.ctx, buf[:want+2], "hget", key, field)
	_ = p.client.Process(p.ctx, cmd)
	n, err := cmd.Result()
	data := buf[:n]
	if err != nil && !errors.Is(err, redis.Nil) {
		var piece []byte
		if piece, err = p.client.HGet(p.ctx, key, field).Bytes(); err == nil {
			n, data = len(piece), buf[:copy(buf[:], piece)]
		}
	}
	switch {
	case errors.Is(err, redis.Nil):
		err = fmt.Errorf("store: file %s: %w", p.file.ID, ErrFileNotFound)
	case err != nil:
		err = wrapRedisError("get file", err)
	case int64(n) != want:
		err = fmt.Errorf("store: file %s: piece %d holds %d bytes of %d", p.file.ID, i, n, want)
	}
	if err != nil {
		piecePool.Put(buf)
		return fetchedPiece{err: err}
	}
	return fetchedPiece{buf: buf, data: data}
}

func (p *pieceReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += p.off
	case io.SeekEnd:
		offset += p.file.Size
	default:
		return 0, errors.New("store: seek: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("store: seek before the start of the file")
	}
	p.off = offset
	return offset, nil
}

// readFile checks the principal's thread and reads the file's record with
// a script and, with withData, its pieces with HGETALL in the same
// pipeline: a script's reply would copy each piece once more inside Redis.
// A file is never changed once written, so the two agree unless it was
// deleted between them, which reads as not found.
func (r *Redis) readFile(ctx context.Context, threadID, principal, fileID string, withData bool) (File, []byte, error) {
	var all *redis.MapStringStringCmd
	extra := func(redis.Pipeliner) {}
	if withData {
		extra = func(pipe redis.Pipeliner) { all = pipe.HGetAll(ctx, fileKey(threadID, fileID)) }
	}
	status, reply, err := r.runWithIndex(ctx, "get file", getFileCall{threadID: threadID, principal: principal, fileID: fileID}, extra)
	if err != nil {
		return File{}, nil, err
	}
	switch status {
	case "OK":
	case "NOTFOUND":
		return File{}, nil, fmt.Errorf("store: file %s: %w", fileID, ErrFileNotFound)
	default:
		return File{}, nil, unexpectedStatus("get file", status)
	}
	record, _ := replyString(reply[0])
	f, err := decodeFile(threadID, fileID, record)
	if err != nil || !withData {
		return f, nil, err
	}
	fields, err := all.Result()
	if err != nil {
		return File{}, nil, wrapRedisError("get file", err)
	}
	if len(fields) == 0 {
		return File{}, nil, fmt.Errorf("store: file %s: %w", fileID, ErrFileNotFound)
	}
	data := make([]byte, 0, f.Size)
	for i := range len(fileChunks(f.Size)) {
		piece, ok := fields[strconv.Itoa(i)]
		if !ok {
			return File{}, nil, fmt.Errorf("store: file %s: piece %d is missing", fileID, i)
		}
		data = append(data, piece...)
	}
	if int64(len(data)) != f.Size {
		return File{}, nil, fmt.Errorf("store: file %s: %d bytes of %d", fileID, len(data), f.Size)
	}
	return f, data, nil
}

// DeleteFile removes a file of the principal's thread and frees it from the
// principal's quota: ErrFileNotFound as StatFile, and ErrUnavailable.
func (r *Redis) DeleteFile(ctx context.Context, threadID, principal, fileID string) error {
	status, _, err := r.runWrite(ctx, "delete file", deleteFileCall{threadID: threadID, principal: principal, fileID: fileID},
		func(redis.Pipeliner) {})
	if err != nil {
		return err
	}
	switch status {
	case "OK":
		r.unreserveFiles(ctx, principal, []string{quotaField(threadID, fileID)})
		return nil
	case "NOTFOUND":
		return fmt.Errorf("store: file %s: %w", fileID, ErrFileNotFound)
	}
	return unexpectedStatus("delete file", status)
}

// freeThreadFiles frees from the principal's quota the files a thread's
// deletion removed: the IDs delete_thread.lua returns.
func (r *Redis) freeThreadFiles(ctx context.Context, principal, threadID string, reply []any) {
	if len(reply) == 0 {
		return
	}
	ids, _ := reply[0].([]any)
	fields := make([]string, 0, len(ids))
	for _, id := range ids {
		if s, ok := replyString(id); ok {
			fields = append(fields, quotaField(threadID, s))
		}
	}
	r.unreserveFiles(ctx, principal, fields)
}

// putFileCall lists a file whose pieces were written (see put_file.lua).
type putFileCall struct {
	threadID, principal, fileID, record string
	size                                int64
}

func (putFileCall) script() *redis.Script { return putFileScript }
func (c putFileCall) keys() []string {
	return []string{keysFor(c.threadID).thread, filesIndexKey(c.threadID), fileKey(c.threadID, c.fileID)}
}
func (c putFileCall) args() []any {
	return []any{c.principal, c.fileID, c.record, c.size, len(fileChunks(c.size))}
}

// getFileCall reads a file's record.
type getFileCall struct {
	threadID, principal, fileID string
}

func (getFileCall) script() *redis.Script { return getFileScript }
func (c getFileCall) keys() []string {
	return []string{keysFor(c.threadID).thread, fileKey(c.threadID, c.fileID)}
}
func (c getFileCall) args() []any { return []any{c.principal} }

// deleteFileCall deletes a file.
type deleteFileCall struct{ threadID, principal, fileID string }

func (deleteFileCall) script() *redis.Script { return deleteFileScript }
func (c deleteFileCall) keys() []string {
	return []string{keysFor(c.threadID).thread, filesIndexKey(c.threadID), fileKey(c.threadID, c.fileID)}
}
func (c deleteFileCall) args() []any { return []any{c.principal, c.fileID} }

// reserveFileCall counts a file of size bytes against a quota of max.
type reserveFileCall struct {
	quota, field string
	size, max    int64
	ttl          time.Duration
}

func (reserveFileCall) script() *redis.Script { return reserveFileScript }
func (c reserveFileCall) keys() []string      { return []string{c.quota} }
func (c reserveFileCall) args() []any         { return []any{c.field, c.size, c.max, c.ttl.Milliseconds()} }

// unreserveFilesCall frees files from a quota.
type unreserveFilesCall struct {
	quota  string
	fields []string
}

func (unreserveFilesCall) script() *redis.Script { return unreserveFilesScript }
func (c unreserveFilesCall) keys() []string      { return []string{c.quota} }
func (c unreserveFilesCall) args() []any {
	args := make([]any, len(c.fields))
	for i, f := range c.fields {
		args[i] = f
	}
	return args
}

var (
	putFileScript        = newScript("put_file.lua")
	getFileScript        = newScript("get_file.lua")
	deleteFileScript     = newScript("delete_file.lua")
	reserveFileScript    = newScript("reserve_file.lua")
	unreserveFilesScript = newScript("unreserve_files.lua")
)
