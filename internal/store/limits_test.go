package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/store"
)

// testTrimmingBytes checks CHATD_HISTORY_MAX_BYTES: the oldest messages are
// trimmed until the history fits, and the newest is kept whatever its size.
func testTrimmingBytes(t *testing.T, newStore newStoreFunc) {
	opts := testOpts
	// Each message is 2000 characters of text and well under 300 bytes of
	// envelope, so three fit in 7000 bytes and four do not.
	opts.HistoryMaxBytes = 7000
	st := newStore(t, opts)
	th := mustCreateThread(t, st)
	sized := func(n int, prefix string) []blocks.Message {
		msgs := newTestMessages(n, prefix)
		for i := range msgs {
			msgs[i].Text = prefix + strings.Repeat("x", 2000)
		}
		return msgs
	}

	var all []blocks.Message
	for i := range 4 {
		msgs := sized(2, string(rune('a'+i)))
		mustTurn(t, st, th.ID, msgs)
		all = append(all, msgs...)
	}
	assert.Equal(t, messageIDs(all[len(all)-3:]), messageIDs(mustHistoryAll(t, st, th.ID)))

	// A commit larger than the cap on its own keeps its newest message.
	huge := newTestMessages(2, "huge")
	huge[0].Text, huge[1].Text = strings.Repeat("y", 9000), strings.Repeat("z", 9000)
	mustTurn(t, st, th.ID, huge)
	assert.Equal(t, messageIDs(huge[1:]), messageIDs(mustHistoryAll(t, st, th.ID)))

	// Small messages fill the room again.
	small := sized(3, "s")
	mustTurn(t, st, th.ID, small)
	assert.Equal(t, messageIDs(small), messageIDs(mustHistoryAll(t, st, th.ID)))
}

// TestMemoryFull checks CHATD_MEMORY_MAX_BYTES: once the embedded store holds
// its limit, new threads and turns get ErrFull; deleting a thread makes room.
func TestMemoryFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts := testOpts
	opts.MemoryMaxBytes = 64 << 10
	st := newTestMemory(t, opts)

	var threads []store.Thread
	var err error
	for range 10_000 {
		th := store.Thread{ID: blocks.NewID(), Owner: alice, Processor: "echo"}
		if err = st.CreateThread(ctx, th); err != nil {
			break
		}
		threads = append(threads, th)
		var start store.TurnStart
		if start, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL}); err != nil {
			break
		}
		msgs := newTestMessages(2, "m")
		msgs[0].Text = strings.Repeat("x", 4000)
		require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: start.LockToken, Messages: msgs}))
	}
	require.ErrorIs(t, err, store.ErrFull)
	assert.Less(t, len(threads), 20, "64 KiB holds a dozen threads of 4 KB")

	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: threads[0].ID, Principal: alice, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrFull, "a turn on an existing thread")
	err = st.CreateThread(ctx, store.Thread{ID: blocks.NewID(), Owner: alice, Processor: "echo"})
	assert.ErrorIs(t, err, store.ErrFull, "a new thread")
	// Reading still works.
	_, _, err = st.GetThread(ctx, threads[0].ID, alice)
	require.NoError(t, err)

	for _, th := range threads[:3] {
		require.NoError(t, st.DeleteThread(ctx, th.ID, alice))
	}
	require.NoError(t, st.CreateThread(ctx, store.Thread{ID: blocks.NewID(), Owner: alice, Processor: "echo"}))
	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: threads[5].ID, Principal: alice, LockTTL: lockTTL})
	assert.False(t, errors.Is(err, store.ErrFull), "room was made: %v", err)
}

// testLeaseRenewal checks turn locks as leases: a renewed lease outlives its
// first term, a lapsed one frees the thread (a claim with it), and a holder
// whose lease was taken over can neither renew nor commit — nothing it
// writes is kept.
func testLeaseRenewal(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	// Long enough that a loaded machine renews it in time.
	lease := time.Second

	held, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lease})
	require.NoError(t, err)
	// Renewed every third of the lease for two leases, it still holds.
	for range 6 {
		time.Sleep(lease / 3)
		require.NoError(t, st.RenewLock(ctx, th.ID, held.LockToken, "", lease))
	}
	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lease})
	require.ErrorIs(t, err, store.ErrBusy)
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: held.LockToken, Messages: newTestMessages(2, "kept")}))

	// Not renewed, the lease lapses and another turn takes the thread.
	lapsed, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lease})
	require.NoError(t, err)
	var taker store.TurnStart
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		taker, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: time.Minute})
		assert.NoError(c, err)
	}, 10*time.Second, 20*time.Millisecond)
	assert.ErrorIs(t, st.RenewLock(ctx, th.ID, lapsed.LockToken, "", lease), store.ErrLockLost)
	// Fencing: the old holder's commit is refused and writes nothing.
	assert.ErrorIs(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: lapsed.LockToken, Messages: newTestMessages(2, "lost")}), store.ErrLockLost)
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: taker.LockToken, Messages: newTestMessages(2, "taker")}))
	assert.Equal(t, []string{"kept-0", "kept-1", "taker-0", "taker-1"}, messageTexts(mustHistoryAll(t, st, th.ID)))

	// A claim whose lease lapses unfinished can be answered again.
	p := mustPause(t, st, th.ID, time.Hour)
	_, err = st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lease})
	require.NoError(t, err)
	_, err = st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lease})
	require.ErrorIs(t, err, store.ErrBusy, "a live claim")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: time.Minute})
		assert.NoError(c, err)
	}, 10*time.Second, 20*time.Millisecond)
}

// testThreadQuota checks CHATD_MAX_THREADS: a principal with MaxThreads live
// threads cannot create another until one is deleted; others are unaffected.
func testThreadQuota(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	opts := testOpts
	opts.MaxThreads = 3
	st := newStore(t, opts)
	// Principals of their own: the suite's other tests share the server.
	owner, other := "quota-"+blocks.NewID(), "quota-"+blocks.NewID()
	create := func(principal string) (string, error) {
		id := blocks.NewID()
		return id, st.CreateThread(ctx, store.Thread{ID: id, Owner: principal, Processor: "echo"})
	}
	var ids []string
	for range 3 {
		id, err := create(owner)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	_, err := create(owner)
	require.ErrorIs(t, err, store.ErrQuotaExceeded)
	_, err = create(other)
	require.NoError(t, err)

	require.NoError(t, st.DeleteThread(ctx, ids[0], owner))
	_, err = create(owner)
	require.NoError(t, err)
	_, err = create(owner)
	assert.ErrorIs(t, err, store.ErrQuotaExceeded)

	// Creates racing at the quota: exactly as many pass as there is room
	// for, whatever the interleaving.
	racer := "quota-" + blocks.NewID()
	const racers = 24
	errs := make(chan error, racers)
	var wg sync.WaitGroup
	for range racers {
		wg.Go(func() {
			_, err := create(racer)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	created := 0
	for err := range errs {
		if err == nil {
			created++
			continue
		}
		require.ErrorIs(t, err, store.ErrQuotaExceeded)
	}
	assert.Equal(t, opts.MaxThreads, created)
	page, err := st.ListThreads(ctx, racer, racers, "")
	require.NoError(t, err)
	assert.Len(t, page.Threads, opts.MaxThreads, "the refused creates left nothing listed")
}
