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
	require.NoError(t, st.DeleteThread(ctx, th.ID, alice))
	left, err := rdb.Keys(ctx, "chatd:{"+th.ID+"}:*").Result()
	require.NoError(t, err)
	assert.Empty(t, left)
}
