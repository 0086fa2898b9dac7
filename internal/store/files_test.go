package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// fileStore is a store with files; the file suite runs on every store.
type fileStore interface {
	contractStore
	PutFile(ctx context.Context, principal string, f store.File, data []byte) error
	CreateFile(ctx context.Context, principal string, f store.File) (store.FileUpload, error)
	StatFile(ctx context.Context, threadID, principal, fileID string) (store.File, error)
	GetFile(ctx context.Context, threadID, principal, fileID string) (store.File, []byte, error)
	OpenFile(ctx context.Context, threadID, principal, fileID string) (store.File, io.ReadSeeker, error)
	DeleteFile(ctx context.Context, threadID, principal, fileID string) error
}

var (
	_ fileStore = (*store.Memory)(nil)
	_ fileStore = (*store.Redis)(nil)
)

type newFileStoreFunc func(tb testing.TB, opts store.Options) fileStore

func runFilesContract(t *testing.T, newStore newFileStoreFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, newStore newFileStoreFunc)
	}{
		{"PutGetDelete", testFilePutGetDelete},
		{"OpenRead", testFileOpenRead},
		{"Upload", testFileUpload},
		{"UploadEnds", testFileUploadEnds},
		{"Tenancy", testFileTenancy},
		{"Quota", testFileQuota},
		{"GoWithThread", testFilesGoWithThread},
		{"ExpireWithThread", testFilesExpireWithThread},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore)
		})
	}
}

// newTestFile returns a file record of n random bytes on threadID, and the
// bytes.
func newTestFile(tb testing.TB, threadID string, n int) (store.File, []byte) {
	tb.Helper()
	data := make([]byte, n)
	_, err := rand.Read(data)
	require.NoError(tb, err)
	sum := sha256.Sum256(data)
	return store.File{ID: blocks.NewID(), ThreadID: threadID, Name: "a.bin", MIMEType: "application/octet-stream",
		Size: int64(n), SHA256: hex.EncodeToString(sum[:]), CreatedAt: time.Now().UTC()}, data
}

func mustPutFile(tb testing.TB, st fileStore, threadID string, n int) (store.File, []byte) {
	tb.Helper()
	return mustPutOwnedFile(tb, st, alice, threadID, n)
}

func mustPutOwnedFile(tb testing.TB, st fileStore, owner, threadID string, n int) (store.File, []byte) {
	tb.Helper()
	f, data := newTestFile(tb, threadID, n)
	require.NoError(tb, st.PutFile(context.Background(), owner, f, data))
	return f, data
}

// newQuotaOwner names a principal of the test's own: the Redis suites share
// a server, and a quota is the principal's.
func newQuotaOwner() string { return "quota-" + blocks.NewID() }

func mustCreateOwnedThread(tb testing.TB, st fileStore, owner string) store.Thread {
	tb.Helper()
	th := store.Thread{ID: blocks.NewID(), Owner: owner, Processor: "echo"}
	require.NoError(tb, st.CreateThread(context.Background(), th))
	return th
}

func testFilePutGetDelete(t *testing.T, newStore newFileStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	// Sizes around the pieces Redis keeps: none, tiny, a piece's edge, many.
	for _, n := range []int{0, 1, 63, 64, 1000, 256<<10 - 16, 256 << 10, 3<<20 + 12345} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			want, data := mustPutFile(t, st, th.ID, n)
			got, gotData, err := st.GetFile(ctx, th.ID, alice, want.ID)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.True(t, bytes.Equal(data, gotData), "the bytes read back are the bytes stored")
			stat, err := st.StatFile(ctx, th.ID, alice, want.ID)
			require.NoError(t, err)
			assert.Equal(t, want, stat)

			require.NoError(t, st.DeleteFile(ctx, th.ID, alice, want.ID))
			_, _, err = st.GetFile(ctx, th.ID, alice, want.ID)
			assert.ErrorIs(t, err, store.ErrFileNotFound)
			assert.ErrorIs(t, st.DeleteFile(ctx, th.ID, alice, want.ID), store.ErrFileNotFound)
		})
	}
}

// testFileOpenRead reads a file through OpenFile as a download does: whole,
// from offsets on and around the pieces' edges (Range requests), and cut
// short by the file's deletion.
func testFileOpenRead(t *testing.T, newStore newFileStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	const piece = 256<<10 - 16 // a full piece in Redis
	for _, n := range []int{0, 1, piece, 3*piece + 12345} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			want, data := mustPutFile(t, st, th.ID, n)
			got, rd, err := st.OpenFile(ctx, th.ID, alice, want.ID)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			size, err := rd.Seek(0, io.SeekEnd)
			require.NoError(t, err)
			assert.EqualValues(t, n, size)
			for _, off := range []int{0, 1, piece - 1, piece, piece + 1, 2*piece + 7, n - 1, n} {
				if off < 0 || off > n {
					continue
				}
				_, err := rd.Seek(int64(off), io.SeekStart)
				require.NoError(t, err)
				rest, err := io.ReadAll(rd)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(data[off:], rest), "bytes from %d", off)
			}
			_, err = rd.Seek(-1, io.SeekStart)
			assert.Error(t, err)
		})
	}
	t.Run("other principal", func(t *testing.T) {
		f, _ := mustPutFile(t, st, th.ID, 10)
		_, _, err := st.OpenFile(ctx, th.ID, bob, f.ID)
		assert.ErrorIs(t, err, store.ErrFileNotFound)
		_, _, err = st.OpenFile(ctx, th.ID, alice, blocks.NewID())
		assert.ErrorIs(t, err, store.ErrFileNotFound)
	})
	t.Run("deleted while read", func(t *testing.T) {
		f, data := mustPutFile(t, st, th.ID, 3*piece)
		_, rd, err := st.OpenFile(ctx, th.ID, alice, f.ID)
		require.NoError(t, err)
		first := make([]byte, 10)
		_, err = io.ReadFull(rd, first)
		require.NoError(t, err)
		assert.Equal(t, data[:10], first)
		require.NoError(t, st.DeleteFile(ctx, th.ID, alice, f.ID))
		// The embedded store hands over bytes it holds; Redis's reader ends
		// with not found at the first piece it has yet to fetch.
		rest, err := io.ReadAll(rd)
		if err != nil {
			assert.ErrorIs(t, err, store.ErrFileNotFound)
			assert.Less(t, len(rest), len(data)-10)
		} else {
			assert.True(t, bytes.Equal(data[10:], rest))
		}
	})
}

// chunkReader hands out its bytes a few thousand at a time, as a request
// body arrives, in reads that do not line up with the pieces.
type chunkReader struct{ rest []byte }

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 7919)], c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// testFileUpload stores files through CreateFile, their bytes arriving in
// small reads, and reads back what PutFile would have stored.
func testFileUpload(t *testing.T, newStore newFileStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	const piece = 256<<10 - 16 // a full piece in Redis
	for _, n := range []int{0, 1, 7919, piece - 1, piece, piece + 1, 2 * piece, 3*piece + 12345} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			want, data := newTestFile(t, th.ID, n)
			up, err := st.CreateFile(ctx, alice, want)
			require.NoError(t, err)
			read, err := up.ReadFrom(&chunkReader{data})
			require.NoError(t, err)
			assert.EqualValues(t, n, read)
			stored, err := up.Commit(ctx)
			require.NoError(t, err)
			assert.Equal(t, want, stored, "the record, with the bytes' SHA-256")
			up.Abort() // after Commit, nothing

			got, gotData, err := st.GetFile(ctx, th.ID, alice, want.ID)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.True(t, bytes.Equal(data, gotData), "the bytes read back are the bytes uploaded")
			_, rd, err := st.OpenFile(ctx, th.ID, alice, want.ID)
			require.NoError(t, err)
			streamed, err := io.ReadAll(rd)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(data, streamed), "the bytes downloaded are the bytes uploaded")
		})
	}
}

// testFileUploadEnds checks the ways an upload ends without a file: given
// up, given too many or too few bytes, over quota, on a thread that is not
// the principal's. None leaves a file, and each frees its quota.
func testFileUploadEnds(t *testing.T, newStore newFileStoreFunc) {
	ctx := context.Background()
	const size = 600 << 10 // three pieces in Redis
	opts := testOpts
	opts.FilesMaxBytes = size
	st := newStore(t, opts)
	owner := newQuotaOwner()
	th := mustCreateOwnedThread(t, st, owner)
	// fits checks that the whole quota is free: no upload kept any of it.
	fits := func(t *testing.T) {
		t.Helper()
		f, _ := mustPutOwnedFile(t, st, owner, th.ID, size)
		require.NoError(t, st.DeleteFile(ctx, th.ID, owner, f.ID))
	}
	gone := func(t *testing.T, f store.File) {
		t.Helper()
		_, err := st.StatFile(ctx, th.ID, owner, f.ID)
		assert.ErrorIs(t, err, store.ErrFileNotFound)
	}

	t.Run("aborted", func(t *testing.T) {
		f, data := newTestFile(t, th.ID, size)
		up, err := st.CreateFile(ctx, owner, f)
		require.NoError(t, err)
		_, err = up.ReadFrom(&chunkReader{data[:size-1000]})
		require.NoError(t, err)
		up.Abort()
		_, err = up.Commit(ctx)
		assert.Error(t, err, "an aborted upload cannot be committed")
		gone(t, f)
		fits(t)
	})
	t.Run("too many bytes", func(t *testing.T) {
		f, data := newTestFile(t, th.ID, size)
		up, err := st.CreateFile(ctx, owner, f)
		require.NoError(t, err)
		_, err = up.ReadFrom(&chunkReader{append(data, 'x')})
		assert.Error(t, err)
		up.Abort()
		gone(t, f)
		fits(t)
	})
	t.Run("too few bytes", func(t *testing.T) {
		f, data := newTestFile(t, th.ID, size)
		up, err := st.CreateFile(ctx, owner, f)
		require.NoError(t, err)
		_, err = up.ReadFrom(&chunkReader{data[:size-1]})
		require.NoError(t, err)
		_, err = up.Commit(ctx)
		assert.Error(t, err)
		up.Abort()
		gone(t, f)
		fits(t)
	})
	t.Run("over quota", func(t *testing.T) {
		kept, _ := mustPutOwnedFile(t, st, owner, th.ID, 1)
		f, _ := newTestFile(t, th.ID, size)
		_, err := st.CreateFile(ctx, owner, f)
		assert.ErrorIs(t, err, store.ErrFileQuotaExceeded, "counted before any byte arrives")
		require.NoError(t, st.DeleteFile(ctx, th.ID, owner, kept.ID))
		fits(t)
	})
	t.Run("another's thread", func(t *testing.T) {
		f, data := newTestFile(t, th.ID, size)
		intruder := newQuotaOwner()
		// The embedded store refuses at once; Redis when the file is
		// listed, after the bytes.
		up, err := st.CreateFile(ctx, intruder, f)
		if err == nil {
			defer up.Abort()
			_, err = up.ReadFrom(&chunkReader{data})
			require.NoError(t, err)
			_, err = up.Commit(ctx)
		}
		assert.ErrorIs(t, err, store.ErrNotFound)
		gone(t, f)
		// The intruder's quota is whole again.
		others := mustCreateOwnedThread(t, st, intruder)
		mustPutOwnedFile(t, st, intruder, others.ID, size)
	})
}

func testFileTenancy(t *testing.T, newStore newFileStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	other := mustCreateThread(t, st)
	f, _ := mustPutFile(t, st, th.ID, 100)

	_, _, err := st.GetFile(ctx, th.ID, bob, f.ID)
	assert.ErrorIs(t, err, store.ErrFileNotFound, "another principal")
	_, err = st.StatFile(ctx, other.ID, alice, f.ID)
	assert.ErrorIs(t, err, store.ErrFileNotFound, "another thread")
	assert.ErrorIs(t, st.DeleteFile(ctx, th.ID, bob, f.ID), store.ErrFileNotFound)

	g, data := newTestFile(t, th.ID, 10)
	assert.ErrorIs(t, st.PutFile(ctx, bob, g, data), store.ErrNotFound, "a file on another's thread")
	g.ThreadID = blocks.NewID()
	assert.ErrorIs(t, st.PutFile(ctx, alice, g, data), store.ErrNotFound, "a file on no thread")

	_, err = st.StatFile(ctx, th.ID, alice, f.ID)
	assert.NoError(t, err, "bob's attempts left alice's file")
}

func testFileQuota(t *testing.T, newStore newFileStoreFunc) {
	ctx := context.Background()
	opts := testOpts
	opts.FilesMaxBytes = 1000
	st := newStore(t, opts)
	owner, other := newQuotaOwner(), newQuotaOwner()
	th := mustCreateOwnedThread(t, st, owner)
	second := mustCreateOwnedThread(t, st, owner)

	a, _ := mustPutOwnedFile(t, st, owner, th.ID, 600)
	mustPutOwnedFile(t, st, owner, second.ID, 400) // exactly the quota, over two threads
	f, data := newTestFile(t, th.ID, 1)
	assert.ErrorIs(t, st.PutFile(ctx, owner, f, data), store.ErrFileQuotaExceeded)

	// Another principal's quota is their own.
	others := mustCreateOwnedThread(t, st, other)
	mustPutOwnedFile(t, st, other, others.ID, 1000)

	require.NoError(t, st.DeleteFile(ctx, th.ID, owner, a.ID))
	require.NoError(t, st.PutFile(ctx, owner, f, data), "a deleted file's bytes are free again")
	g, gdata := newTestFile(t, th.ID, 600)
	assert.ErrorIs(t, st.PutFile(ctx, owner, g, gdata), store.ErrFileQuotaExceeded)

	require.NoError(t, st.DeleteThread(ctx, second.ID, owner))
	require.NoError(t, st.PutFile(ctx, owner, g, gdata), "a deleted thread's files are free again")
}

func testFilesGoWithThread(t *testing.T, newStore newFileStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	f, _ := mustPutFile(t, st, th.ID, 5000)
	require.NoError(t, st.DeleteThread(ctx, th.ID, alice))
	_, _, err := st.GetFile(ctx, th.ID, alice, f.ID)
	assert.ErrorIs(t, err, store.ErrFileNotFound)
}

func testFilesExpireWithThread(t *testing.T, newStore newFileStoreFunc) {
	ctx := context.Background()
	opts := testOpts
	opts.ThreadTTL = time.Second
	opts.FilesMaxBytes = 100
	st := newStore(t, opts)
	owner := newQuotaOwner()
	th := mustCreateOwnedThread(t, st, owner)
	f, _ := mustPutOwnedFile(t, st, owner, th.ID, 100)
	// A commit refreshes the thread's TTL, and its files' with it.
	time.Sleep(opts.ThreadTTL / 2)
	start, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: owner, LockTTL: lockTTL})
	require.NoError(t, err)
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: start.LockToken, Messages: newTestMessages(1, "m")}))
	time.Sleep(opts.ThreadTTL * 3 / 4)
	_, _, err = st.GetFile(ctx, th.ID, owner, f.ID)
	require.NoError(t, err, "the file lives as long as its thread")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, _, err := st.GetThread(ctx, th.ID, owner)
		assert.ErrorIs(c, err, store.ErrNotFound)
	}, 10*time.Second, 20*time.Millisecond)
	_, _, err = st.GetFile(ctx, th.ID, owner, f.ID)
	assert.ErrorIs(t, err, store.ErrFileNotFound)

	// The expired file no longer counts against the quota.
	next := mustCreateOwnedThread(t, st, owner)
	g, data := newTestFile(t, next.ID, 100)
	assert.NoError(t, st.PutFile(ctx, owner, g, data))
}

func TestMemoryFiles(t *testing.T) {
	runFilesContract(t, func(tb testing.TB, opts store.Options) fileStore { return newTestMemory(tb, opts).(fileStore) })
}

func TestRedisFiles(t *testing.T) {
	srv := redistest.Start(t)
	runFilesContract(t, func(tb testing.TB, opts store.Options) fileStore {
		return newTestRedis(tb, srv, &redis.Options{Addr: srv.Addr()}, opts)
	})
}

// TestRedisClusterFiles runs the file suite on a Cluster, where a file's
// keys must share its thread's slot and a principal's quota lives on
// another.
func TestRedisClusterFiles(t *testing.T) {
	c := redistest.StartCluster(t)
	runFilesContract(t, func(tb testing.TB, opts store.Options) fileStore {
		tb.Helper()
		opts.WaitReplicas = 1
		st, err := store.OpenRedis(c.URL(), opts)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = st.Close() })
		return st
	})
}

// TestMemoryFilesFull checks that the embedded store counts files against
// MemoryMaxBytes and frees them with their thread.
func TestMemoryFilesFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts := testOpts
	opts.MemoryMaxBytes = 1 << 20
	st := newTestMemory(t, opts).(fileStore)
	th := mustCreateThread(t, st)
	mustPutFile(t, st, th.ID, 700<<10)
	f, data := newTestFile(t, th.ID, 400<<10)
	require.ErrorIs(t, st.PutFile(ctx, alice, f, data), store.ErrFull)
	err := st.CreateThread(ctx, store.Thread{ID: blocks.NewID(), Owner: alice, Processor: "echo"})
	require.NoError(t, err, "the store is not full yet")

	require.NoError(t, st.DeleteThread(ctx, th.ID, alice))
	next := mustCreateThread(t, st)
	f.ThreadID = next.ID
	assert.NoError(t, st.PutFile(ctx, alice, f, data), "the deleted thread's file made room")
}

// TestRedisFileKeys checks where a file lives: on its thread's slot, with
// its thread's TTL, and in memory about its size (MEMORY USAGE, at most
// 1.05× the bytes from 16 KiB on), and that the thread's deletion leaves none of it.
func TestRedisFileKeys(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := newServerClient(t, srv)
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, testOpts)
	th := mustCreateThread(t, st)
	threadKey := "chatd:{" + th.ID + "}:thread"
	threadSlot, err := rdb.ClusterKeySlot(ctx, threadKey).Result()
	if err != nil {
		// A server without cluster support: the hash tag is checked by name.
		threadSlot = -1
	}

	for _, n := range []int{16 << 10, 100_000, 1 << 20, 5 << 20, 10 << 20} {
		f, _ := mustPutFile(t, st, th.ID, n)
		key := "chatd:{" + th.ID + "}:file:" + f.ID
		usage, err := rdb.MemoryUsage(ctx, key, 0).Result()
		require.NoError(t, err)
		ratio := float64(usage) / float64(n)
		t.Logf("file of %d bytes: MEMORY USAGE %d (%.4f×)", n, usage, ratio)
		assert.LessOrEqual(t, ratio, 1.05, "memory of a %d-byte file", n)
		ttl, err := rdb.PTTL(ctx, key).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Duration(0), "a file expires")
		if threadSlot >= 0 {
			slot, err := rdb.ClusterKeySlot(ctx, key).Result()
			require.NoError(t, err)
			assert.Equal(t, threadSlot, slot)
		}
	}

	// An upload's pieces expire until the file is listed, and an aborted
	// upload leaves none.
	f, data := newTestFile(t, th.ID, 3<<20)
	up, err := st.CreateFile(ctx, alice, f)
	require.NoError(t, err)
	_, err = up.ReadFrom(bytes.NewReader(data[:2<<20]))
	require.NoError(t, err)
	key := "chatd:{" + th.ID + "}:file:" + f.ID
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		n, err := rdb.HLen(ctx, key).Result()
		require.NoError(c, err)
		assert.Positive(c, n, "pieces are sent while the upload goes on")
	}, 10*time.Second, 10*time.Millisecond)
	ttl, err := rdb.PTTL(ctx, key).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Duration(0), "the pieces of an upload expire")
	up.Abort()
	n, err := rdb.Exists(ctx, key).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "an aborted upload leaves no key")

	// A piece of the wrong size (a damaged key) ends a download with an
	// error, whether it is longer than its buffer or shorter.
	for _, bad := range [][]byte{make([]byte, 300<<10), []byte("short")} {
		f, _ := mustPutFile(t, st, th.ID, 3<<20)
		require.NoError(t, rdb.HSet(ctx, "chatd:{"+th.ID+"}:file:"+f.ID, "1", bad).Err())
		_, rd, err := st.OpenFile(ctx, th.ID, alice, f.ID)
		require.NoError(t, err)
		_, err = io.ReadAll(rd)
		assert.ErrorContains(t, err, fmt.Sprintf("piece 1 holds %d bytes", len(bad)))
	}

	require.NoError(t, st.DeleteThread(ctx, th.ID, alice))
	left, err := rdb.Keys(ctx, "chatd:{"+th.ID+"}:*").Result()
	require.NoError(t, err)
	assert.Empty(t, left)
}
