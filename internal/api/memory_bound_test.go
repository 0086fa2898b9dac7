package api_test

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/store"
)

// TestStoreFullOfTurnLogs checks that CHATD_MEMORY_MAX_BYTES counts turn
// logs: big echo turns on one thread, whose history is trimmed to a
// fraction of the bound, still fill the embedded store with the results
// their logs keep. Then new work is 507 store_full, reads still work, and
// the live heap has grown by a few times the bound, not by every turn's
// result. Not parallel: it reads the process's heap.
func TestStoreFullOfTurnLogs(t *testing.T) {
	const bound, size, most = 8 << 20, 400 << 10, 100
	opts := store.DefaultOptions
	opts.MemoryMaxBytes = bound
	opts.HistoryMaxBytes = bound / 8
	st := store.NewMemory(opts)
	t.Cleanup(func() { _ = st.Close() })
	ts := newTestServer(t, withStore(st))
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	thread := ts.mustCreateThread(t, alice, "echo")
	before := heap()

	body := []byte(`{"message":"` + strings.Repeat("x", size) + `"}`)
	turns := 0
	for ; ; turns++ {
		require.Less(t, turns, most, "%d turns of %d bytes never filled a store of %d", most, size, bound)
		resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: body})
		if resp.Status != http.StatusOK {
			mustProblem(t, resp, http.StatusInsufficientStorage, "store_full")
			break
		}
	}
	grown := heap() - before
	t.Logf("%d turns of %d bytes filled a store of %d bytes; live heap grew by %d bytes", turns, size, bound, grown)
	mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", as: bob, body: []byte(`{"processor":"echo"}`)}),
		http.StatusInsufficientStorage, "store_full")
	assert.NotEmpty(t, ts.mustHistory(t, alice, thread), "reads still work")
	assert.Less(t, grown, int64(4*bound), "the heap holds about the bound")
}
