package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/store"
)

// contractStore is the method set both implementations share; the contract
// suite runs against it so Memory and Redis cannot drift apart.
type contractStore interface {
	CreateThread(ctx context.Context, t store.Thread) error
	GetThread(ctx context.Context, threadID, principal string) (store.Thread, *store.Pending, error)
	DeleteThread(ctx context.Context, threadID, principal string) error
	BeginTurn(ctx context.Context, b store.BeginTurn) (store.TurnStart, error)
	BeginResume(ctx context.Context, b store.BeginResume) (store.TurnStart, error)
	RenewLock(ctx context.Context, threadID, lockToken, turnID string, ttl time.Duration) error
	CommitTurn(ctx context.Context, c store.Commit) error
	Release(ctx context.Context, r store.ReleaseTurn) error
	History(ctx context.Context, threadID, principal string, limit int, before string) (store.Page, error)
	AppendTurnEvents(ctx context.Context, threadID, turnID string, events []store.TurnEvent) error
	TurnEvents(ctx context.Context, threadID, principal, turnID string, after int, wait time.Duration) ([]store.TurnEvent, bool, error)
	UpdateThread(ctx context.Context, threadID, principal string, patch store.ThreadPatch) (store.Thread, error)
	ListThreads(ctx context.Context, principal string, limit int, cursor string) (store.ThreadList, error)
	Ping(ctx context.Context) error
	Close() error
}

var (
	_ contractStore = (*store.Memory)(nil)
	_ contractStore = (*store.Redis)(nil)
)

// newStoreFunc builds a fresh store with the given options; the store is
// closed when tb ends.
type newStoreFunc func(tb testing.TB, opts store.Options) contractStore

const (
	alice = "alice"
	bob   = "bob"
	// lockTTL is long enough never to expire during a test that does not
	// wait for it.
	lockTTL = time.Minute
	// shortTTL is what tests that wait for an expiry use; waiting polls, so
	// no assertion depends on how long the expiry actually took.
	shortTTL = 150 * time.Millisecond
)

var testOpts = store.Options{ThreadTTL: time.Hour, IdempotencyTTL: time.Hour}

func runContract(t *testing.T, newStore newStoreFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, newStore newStoreFunc)
	}{
		{"CreateGetDelete", testCreateGetDelete},
		{"OwnerIsolation", testOwnerIsolation},
		{"ThreadTTL", testThreadTTL},
		{"Window", testWindow},
		{"WindowByProcessor", testWindowByProcessor},
		{"Trimming", testTrimming},
		{"TrimmingBytes", testTrimmingBytes},
		{"Paging", testPaging},
		{"CursorMisuse", testCursorMisuse},
		{"LockContention", testLockContention},
		{"LockExpiry", testLockExpiry},
		{"Release", testRelease},
		{"Idempotency", testIdempotency},
		{"IdempotencyExpiry", testIdempotencyExpiry},
		{"ResumeOutcomes", testResumeOutcomes},
		{"PendingExpiry", testPendingExpiry},
		{"ClaimExpiresWithLock", testClaimExpiresWithLock},
		{"LeaseRenewal", testLeaseRenewal},
		{"ThreadQuota", testThreadQuota},
		{"CommitAtomicity", testCommitAtomicity},
		{"CommitAfterDelete", testCommitAfterDelete},
		{"ConcurrentResume", testConcurrentResume},
		{"ConcurrentTurns", testConcurrentTurns},
		{"TurnLog", testTurnLog},
		{"TurnLogLast", testTurnLogLast},
		{"TurnLogFollow", testTurnLogFollow},
		{"TurnLogExpiry", testTurnLogExpiry},
		{"RunningTurn", testRunningTurn},
		{"UpdateThread", testUpdateThread},
		{"ListThreads", testListThreads},
		{"HistoryAtScale", testHistoryAtScale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore)
		})
	}
}

// mustCreateThread creates a thread owned by alice and returns it.
func mustCreateThread(tb testing.TB, st contractStore) store.Thread {
	tb.Helper()
	th := store.Thread{
		ID:        blocks.NewID(),
		Owner:     alice,
		Processor: "echo",
		CreatedAt: time.Now().UTC(),
	}
	require.NoError(tb, st.CreateThread(context.Background(), th))
	got, _, err := st.GetThread(context.Background(), th.ID, alice)
	require.NoError(tb, err)
	return got
}

// newTestMessages mints n messages whose texts are prefix-0, prefix-1, ...
func newTestMessages(n int, prefix string) []blocks.Message {
	msgs := make([]blocks.Message, n)
	for i := range msgs {
		role := blocks.RoleUser
		if i%2 == 1 {
			role = blocks.RoleAssistant
		}
		msgs[i] = blocks.NewMessage(role, fmt.Sprintf("%s-%d", prefix, i), nil, map[string]any{"n": float64(i)})
	}
	return msgs
}

// mustBegin begins a plain turn on threadID as alice.
func mustBegin(tb testing.TB, st contractStore, threadID string, window int) store.TurnStart {
	tb.Helper()
	ts, err := st.BeginTurn(context.Background(), store.BeginTurn{
		ThreadID: threadID, Principal: alice, LockTTL: lockTTL, Window: window,
	})
	require.NoError(tb, err)
	require.NotEmpty(tb, ts.LockToken)
	return ts
}

// mustTurn runs one complete plain turn that appends msgs.
func mustTurn(tb testing.TB, st contractStore, threadID string, msgs []blocks.Message) {
	tb.Helper()
	ts := mustBegin(tb, st, threadID, 0)
	require.NoError(tb, st.CommitTurn(context.Background(), store.Commit{
		ThreadID: threadID, LockToken: ts.LockToken, Messages: msgs,
	}))
}

// mustAppend appends n fresh messages in turns of at most 500 and returns
// them all.
func mustAppend(tb testing.TB, st contractStore, threadID string, n int) []blocks.Message {
	tb.Helper()
	msgs := newTestMessages(n, "m")
	for start := 0; start < n; start += 500 {
		mustTurn(tb, st, threadID, msgs[start:min(start+500, n)])
	}
	return msgs
}

// mustPause runs a turn that pauses with a new elicitation expiring after
// ttl, and returns the pending elicitation.
func mustPause(tb testing.TB, st contractStore, threadID string, ttl time.Duration) store.Pending {
	tb.Helper()
	p := newTestPending(ttl)
	ts := mustBegin(tb, st, threadID, 0)
	require.NoError(tb, st.CommitTurn(context.Background(), store.Commit{
		ThreadID:  threadID,
		LockToken: ts.LockToken,
		Messages:  newTestMessages(2, "ask"),
		Pause:     &p,
	}))
	return p
}

func newTestPending(ttl time.Duration) store.Pending {
	id := blocks.NewID()
	return store.Pending{
		ElicitationID: id,
		Request:       json.RawMessage(`{"message":"Which colour?","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}},"_meta":{"drupal.org/ai.elicitation_id":"` + id + `"}}`),
		State:         []byte{0, 1, 2, 0xff, 'x'},
		ExpiresAt:     time.Now().Add(ttl),
	}
}

// assertSamePending compares pendings at the millisecond resolution expiry
// is stored with.
func assertSamePending(tb testing.TB, want store.Pending, got *store.Pending) {
	tb.Helper()
	if !assert.NotNil(tb, got) {
		return
	}
	assert.Equal(tb, want.ElicitationID, got.ElicitationID)
	assert.JSONEq(tb, string(want.Request), string(got.Request))
	assert.Equal(tb, want.State, got.State)
	assert.Equal(tb, want.ExpiresAt.UnixMilli(), got.ExpiresAt.UnixMilli())
}

// mustHistoryAll returns the whole history (up to 10,000 messages).
func mustHistoryAll(tb testing.TB, st contractStore, threadID string) []blocks.Message {
	tb.Helper()
	var all []blocks.Message
	before := ""
	for {
		page, err := st.History(context.Background(), threadID, alice, 200, before)
		require.NoError(tb, err)
		all = append(page.Messages, all...)
		if page.NextBefore == "" {
			return all
		}
		before = page.NextBefore
	}
}

func messageTexts(msgs []blocks.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text
	}
	return out
}

func mustDecode(tb testing.TB, enc blocks.EncodedMessages) []blocks.Message {
	tb.Helper()
	msgs, err := enc.Decode()
	require.NoError(tb, err)
	return msgs
}

func messageIDs(msgs []blocks.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

func testCreateGetDelete(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	created := time.Date(2025, 6, 18, 12, 0, 0, 123456789, time.UTC)
	want := store.Thread{ID: blocks.NewID(), Owner: alice, Processor: "demo", CreatedAt: created, UpdatedAt: created}
	require.NoError(t, st.CreateThread(ctx, want))

	got, pending, err := st.GetThread(ctx, want.ID, alice)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Nil(t, pending)

	assert.Error(t, st.CreateThread(ctx, want), "creating an existing thread")

	require.NoError(t, st.DeleteThread(ctx, want.ID, alice))
	_, _, err = st.GetThread(ctx, want.ID, alice)
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.ErrorIs(t, st.DeleteThread(ctx, want.ID, alice), store.ErrNotFound)
	_, _, err = st.GetThread(ctx, blocks.NewID(), alice)
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.NoError(t, st.Ping(ctx))
}

func testOwnerIsolation(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	mustAppend(t, st, th.ID, 3)
	p := mustPause(t, st, th.ID, time.Hour)

	tests := []struct {
		name string
		op   func() error
	}{
		{"GetThread", func() error { _, _, err := st.GetThread(ctx, th.ID, bob); return err }},
		{"History", func() error { _, err := st.History(ctx, th.ID, bob, 10, ""); return err }},
		{"BeginTurn", func() error {
			_, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: bob, LockTTL: lockTTL})
			return err
		}},
		{"BeginResume", func() error {
			_, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: bob, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
			return err
		}},
		{"DeleteThread", func() error { return st.DeleteThread(ctx, th.ID, bob) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.op(), store.ErrNotFound)
		})
	}

	// None of bob's attempts changed alice's thread.
	got, pending, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Equal(t, th.ID, got.ID)
	assertSamePending(t, p, pending)
	assert.Len(t, mustHistoryAll(t, st, th.ID), 5)
}

func testThreadTTL(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	opts := testOpts
	opts.ThreadTTL = shortTTL
	st := newStore(t, opts)
	th := mustCreateThread(t, st)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, _, err := st.GetThread(ctx, th.ID, alice)
		assert.ErrorIs(c, err, store.ErrNotFound)
	}, 10*time.Second, 20*time.Millisecond)
	_, err := st.History(ctx, th.ID, alice, 10, "")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func testWindow(t *testing.T, newStore newStoreFunc) {
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)

	ts := mustBegin(t, st, th.ID, 5)
	assert.Empty(t, ts.History, "window of an empty thread")
	require.NoError(t, st.Release(context.Background(), store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))

	msgs := mustAppend(t, st, th.ID, 7)
	tests := []struct {
		window int
		want   []blocks.Message
	}{
		{0, nil},
		{3, msgs[4:]},
		{7, msgs},
		{50, msgs},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.window), func(t *testing.T) {
			ts := mustBegin(t, st, th.ID, tt.window)
			defer func() {
				require.NoError(t, st.Release(context.Background(), store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
			}()
			assert.Equal(t, messageIDs(tt.want), messageIDs(mustDecode(t, ts.History)))
			assert.Equal(t, messageTexts(tt.want), messageTexts(mustDecode(t, ts.History)))
			assert.Equal(t, th.ID, ts.Thread.ID)
			assert.Nil(t, ts.Replay)
			assert.Nil(t, ts.Pending)
		})
	}
}

// testWindowByProcessor: a thread's processor picks its window, for plain
// turns and resumes alike; other processors get the default.
func testWindowByProcessor(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st) // bound to echo
	msgs := mustAppend(t, st, th.ID, 6)
	tests := []struct {
		name        string
		byProcessor map[string]int
		want        []blocks.Message
	}{
		{"no overrides", nil, msgs[2:]},
		{"override for another processor", map[string]int{"demo": 1}, msgs[2:]},
		{"override for the thread's processor", map[string]int{"demo": 1, "echo": 2}, msgs[4:]},
		{"none for the thread's processor", map[string]int{"echo": 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Window: 4, WindowByProcessor: tt.byProcessor})
			require.NoError(t, err)
			assert.Equal(t, messageIDs(tt.want), messageIDs(mustDecode(t, ts.History)))
			require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
		})
	}

	p := mustPause(t, st, th.ID, time.Minute)
	ts, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID,
		LockTTL: lockTTL, Window: 4, WindowByProcessor: map[string]int{"echo": 1}})
	require.NoError(t, err)
	assert.Len(t, mustDecode(t, ts.History), 1)
}

func testTrimming(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	opts := testOpts
	opts.HistoryMax = 5
	st := newStore(t, opts)
	th := mustCreateThread(t, st)

	var all []blocks.Message
	for i := range 3 {
		msgs := newTestMessages(3, fmt.Sprint("turn", i))
		mustTurn(t, st, th.ID, msgs)
		all = append(all, msgs...)
	}
	want := all[len(all)-5:]
	assert.Equal(t, messageIDs(want), messageIDs(mustHistoryAll(t, st, th.ID)))

	page, err := st.History(ctx, th.ID, alice, 10, "")
	require.NoError(t, err)
	assert.Equal(t, messageIDs(want), messageIDs(page.Messages))
	assert.Empty(t, page.NextBefore, "nothing older survives the trim")

	for _, trimmed := range all[:len(all)-5] {
		_, err := st.History(ctx, th.ID, alice, 10, trimmed.ID)
		assert.ErrorIs(t, err, store.ErrUnknownCursor, "trimmed message %s", trimmed.Text)
	}
	// The oldest surviving message is still a cursor, with nothing before it.
	page, err = st.History(ctx, th.ID, alice, 10, want[0].ID)
	require.NoError(t, err)
	assert.Empty(t, page.Messages)
	assert.Empty(t, page.NextBefore)

	// A single commit larger than the cap keeps only its newest messages.
	big := newTestMessages(8, "big")
	mustTurn(t, st, th.ID, big)
	assert.Equal(t, messageIDs(big[3:]), messageIDs(mustHistoryAll(t, st, th.ID)))
}

func testPaging(t *testing.T, newStore newStoreFunc) {
	st := newStore(t, testOpts)
	tests := []struct {
		name  string
		total int
		limit int
		// wantPages are the [start, end) index ranges of each page, newest
		// page first.
		wantPages [][2]int
	}{
		{"empty thread", 0, 10, [][2]int{{0, 0}}},
		{"limit larger than history", 7, 50, [][2]int{{0, 7}}},
		{"limit equal to history", 10, 10, [][2]int{{0, 10}}},
		{"partial oldest page", 25, 10, [][2]int{{15, 25}, {5, 15}, {0, 5}}},
		{"exact boundary", 20, 10, [][2]int{{10, 20}, {0, 10}}},
		{"limit one", 3, 1, [][2]int{{2, 3}, {1, 2}, {0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := mustCreateThread(t, st)
			msgs := mustAppend(t, st, th.ID, tt.total)
			before := ""
			for i, want := range tt.wantPages {
				page, err := st.History(context.Background(), th.ID, alice, tt.limit, before)
				require.NoError(t, err, "page %d", i)
				assert.Equal(t, messageIDs(msgs[want[0]:want[1]]), messageIDs(page.Messages), "page %d", i)
				wantNext := ""
				if want[0] > 0 {
					wantNext = msgs[want[0]].ID
				}
				assert.Equal(t, wantNext, page.NextBefore, "page %d", i)
				before = page.NextBefore
			}
			assert.Empty(t, before, "walk ends at the oldest page")
		})
	}

	t.Run("content survives", func(t *testing.T) {
		th := mustCreateThread(t, st)
		msg := blocks.NewMessage(blocks.RoleAssistant, "hi", []blocks.ContentBlock{blocks.Text("block")},
			map[string]any{"drupal.org/ai.citations": []any{"a", "b"}})
		mustTurn(t, st, th.ID, []blocks.Message{msg})
		page, err := st.History(context.Background(), th.ID, alice, 1, "")
		require.NoError(t, err)
		require.Len(t, page.Messages, 1)
		want, err := json.Marshal(msg)
		require.NoError(t, err)
		got, err := json.Marshal(page.Messages[0])
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got))
	})
}

func testCursorMisuse(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	msgs := mustAppend(t, st, th.ID, 3)
	other := mustCreateThread(t, st)
	otherMsgs := mustAppend(t, st, other.ID, 1)

	tests := []struct {
		name   string
		limit  int
		before string
		want   error
	}{
		{"unknown id", 10, blocks.NewID(), store.ErrUnknownCursor},
		{"not an id", 10, "garbage", store.ErrUnknownCursor},
		{"another thread's message", 10, otherMsgs[0].ID, store.ErrUnknownCursor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := st.History(ctx, th.ID, alice, tt.limit, tt.before)
			assert.ErrorIs(t, err, tt.want)
		})
	}
	for _, limit := range []int{0, -1} {
		_, err := st.History(ctx, th.ID, alice, limit, "")
		assert.Error(t, err, "limit %d", limit)
		_, err = st.History(ctx, th.ID, alice, limit, msgs[2].ID)
		assert.Error(t, err, "limit %d with cursor", limit)
	}
}

func testLockContention(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	first := mustBegin(t, st, th.ID, 0)

	_, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrBusy)

	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: first.LockToken, Messages: newTestMessages(2, "a")}))
	second := mustBegin(t, st, th.ID, 10)
	assert.NotEqual(t, first.LockToken, second.LockToken)
	assert.Len(t, second.History, 2)
	assert.ErrorIs(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: first.LockToken}), store.ErrLockLost,
		"a token that was committed once no longer holds the lock")
}

func testLockExpiry(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	stale, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: shortTTL})
	require.NoError(t, err)

	var fresh store.TurnStart
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		fresh, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
		assert.NoError(c, err)
	}, 10*time.Second, 20*time.Millisecond)

	stalePause := newTestPending(time.Hour)
	err = st.CommitTurn(ctx, store.Commit{
		ThreadID: th.ID, LockToken: stale.LockToken, Messages: newTestMessages(2, "stale"),
		Pause: &stalePause, Idempotency: &store.Idempotency{Principal: alice, Key: "k", Fingerprint: "f"},
	})
	assert.ErrorIs(t, err, store.ErrLockLost)
	assert.ErrorIs(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: stale.LockToken}), store.ErrLockLost)

	// The stale commit wrote nothing, and did not disturb the fresh lock.
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: fresh.LockToken, Messages: newTestMessages(2, "fresh")}))
	assert.Equal(t, []string{"fresh-0", "fresh-1"}, messageTexts(mustHistoryAll(t, st, th.ID)))
	_, pending, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Nil(t, pending)
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL})
	require.NoError(t, err)
	assert.Nil(t, ts.Replay)
}

func testRelease(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	ts := mustBegin(t, st, th.ID, 0)

	require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
	assert.ErrorIs(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}), store.ErrLockLost)
	assert.ErrorIs(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Messages: newTestMessages(1, "x")}), store.ErrLockLost)
	assert.Empty(t, mustHistoryAll(t, st, th.ID))

	next := mustBegin(t, st, th.ID, 0)
	assert.ErrorIs(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: "not-the-token"}), store.ErrLockLost)
	_, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrBusy, "a wrong token does not release the lock")
	require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: next.LockToken}))
	assert.ErrorIs(t, st.Release(ctx, store.ReleaseTurn{ThreadID: blocks.NewID(), LockToken: next.LockToken}), store.ErrLockLost)
}

func testIdempotency(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	other := mustCreateThread(t, st)

	rec := store.Idempotency{Principal: alice, Key: "key-1", Fingerprint: "sha256:abc", Result: []byte(`{"status":"completed"}`)}
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: rec.Key, LockTTL: lockTTL})
	require.NoError(t, err)
	require.Nil(t, ts.Replay, "first use of a key")
	require.NoError(t, st.CommitTurn(ctx, store.Commit{
		ThreadID: th.ID, LockToken: ts.LockToken, Messages: newTestMessages(2, "t"), Idempotency: &rec,
	}))

	tests := []struct {
		name       string
		threadID   string
		key        string
		wantReplay bool
	}{
		{"same thread and key", th.ID, rec.Key, true},
		{"other key", th.ID, "key-2", false},
		{"other thread, same key", other.ID, rec.Key, false},
		{"no key", th.ID, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: tt.threadID, Principal: alice, IdempotencyKey: tt.key, LockTTL: lockTTL})
			require.NoError(t, err)
			if !tt.wantReplay {
				assert.Nil(t, ts.Replay)
				assert.NotEmpty(t, ts.LockToken)
				require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: tt.threadID, LockToken: ts.LockToken}))
				return
			}
			assert.Equal(t, &rec, ts.Replay)
			assert.Empty(t, ts.LockToken, "a replay takes no lock")
			assert.Equal(t, th.ID, ts.Thread.ID)
		})
	}

	// A replay wins over a busy lock: the retry of a finished turn is
	// answered even while another turn runs.
	running := mustBegin(t, st, th.ID, 0)
	ts, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: rec.Key, LockTTL: lockTTL})
	require.NoError(t, err)
	assert.Equal(t, &rec, ts.Replay)
	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "key-3", LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrBusy)
	require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: running.LockToken}))

	// Another principal never reaches the record.
	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: bob, IdempotencyKey: rec.Key, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func testIdempotencyExpiry(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	opts := testOpts
	opts.IdempotencyTTL = shortTTL
	st := newStore(t, opts)
	th := mustCreateThread(t, st)
	rec := store.Idempotency{Principal: alice, Key: "k", Fingerprint: "f", Result: []byte("r")}
	ts := mustBegin(t, st, th.ID, 0)
	committed := time.Now()
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Idempotency: &rec}))

	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL})
	require.NoError(t, err)
	// Live right after the commit — unless the machine took the record's
	// whole lifetime to ask, which is no fault of the store.
	if time.Since(committed) < shortTTL {
		require.NotNil(t, ts.Replay, "record is live right after the commit")
	}
	if ts.LockToken != "" {
		require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
	}

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL})
		if !assert.NoError(c, err) {
			return
		}
		assert.Nil(c, ts.Replay)
		if ts.LockToken != "" {
			assert.NoError(c, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
		}
	}, 10*time.Second, 20*time.Millisecond)
}

func testResumeOutcomes(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	p := mustPause(t, st, th.ID, time.Hour)
	resume := func(id string) (store.TurnStart, error) {
		return st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: id, LockTTL: lockTTL, Window: 10})
	}

	_, pending, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assertSamePending(t, p, pending)

	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
	var pe *store.PendingError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, store.ErrElicitationPending)
	assertSamePending(t, p, &pe.Pending)

	_, err = resume(blocks.NewID())
	assert.ErrorIs(t, err, store.ErrElicitationNotFound)

	claim, err := resume(p.ElicitationID)
	require.NoError(t, err)
	assertSamePending(t, p, claim.Pending)
	assert.Equal(t, []string{"ask-0", "ask-1"}, messageTexts(mustDecode(t, claim.History)))
	assert.NotEmpty(t, claim.LockToken)

	_, err = resume(p.ElicitationID)
	assert.ErrorIs(t, err, store.ErrBusy, "a duplicate answer while the first is processed: retry later")
	assert.NotErrorIs(t, err, store.ErrElicitationConsumed, "consumed means committed")
	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrBusy)

	// Releasing the claim (a failed processor, an invalid answer) leaves the
	// question pending.
	require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: claim.LockToken}))
	_, pending, err = st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assertSamePending(t, p, pending)

	claim, err = resume(p.ElicitationID)
	require.NoError(t, err)
	require.NoError(t, st.CommitTurn(ctx, store.Commit{
		ThreadID: th.ID, LockToken: claim.LockToken, Messages: newTestMessages(2, "answer"), Consumed: p.ElicitationID,
	}))
	_, err = resume(p.ElicitationID)
	assert.ErrorIs(t, err, store.ErrElicitationConsumed)
	_, pending, err = st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Nil(t, pending)
	ts := mustBegin(t, st, th.ID, 0)

	// A resumed turn may pause again with a new question; the answered one
	// stays consumed.
	next := newTestPending(time.Hour)
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Pause: &next}))
	_, err = resume(p.ElicitationID)
	assert.ErrorIs(t, err, store.ErrElicitationConsumed)
	claim, err = resume(next.ElicitationID)
	require.NoError(t, err)
	assertSamePending(t, next, claim.Pending)
	require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: claim.LockToken}))
}

func testPendingExpiry(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	p := mustPause(t, st, th.ID, shortTTL)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
		if assert.NoError(c, err) {
			assert.NoError(c, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
		}
	}, 10*time.Second, 20*time.Millisecond)

	// The first resume to find the expiry is told so, once: the expiry
	// metric counts each elicitation once however often it is retried.
	for i, wantFirst := range []bool{true, false, false} {
		_, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
		assert.ErrorIs(t, err, store.ErrElicitationExpired)
		var expired *store.ExpiredError
		if assert.ErrorAs(t, err, &expired) {
			assert.Equal(t, wantFirst, expired.First, "resume %d", i+1)
		}
	}
	_, pending, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Nil(t, pending)
	_, err = st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: blocks.NewID(), LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrElicitationNotFound, "not-found stays distinct from expired")
}

func testClaimExpiresWithLock(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	p := mustPause(t, st, th.ID, time.Hour)
	stale, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: shortTTL})
	require.NoError(t, err)

	var fresh store.TurnStart
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		fresh, err = st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
		assert.NoError(c, err)
	}, 10*time.Second, 20*time.Millisecond)
	assertSamePending(t, p, fresh.Pending)

	assert.ErrorIs(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: stale.LockToken, Consumed: p.ElicitationID}), store.ErrLockLost)
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: fresh.LockToken, Consumed: p.ElicitationID}))
	_, err = st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrElicitationConsumed)
}

func testCommitAtomicity(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	ts := mustBegin(t, st, th.ID, 0)
	msgs := newTestMessages(2, "paused")
	p := newTestPending(time.Hour)
	rec := store.Idempotency{Principal: alice, Key: "k", Fingerprint: "f", Result: []byte("r")}
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Messages: msgs, Pause: &p, Idempotency: &rec}))

	got, pending, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assertSamePending(t, p, pending)
	assert.Equal(t, messageIDs(msgs), messageIDs(mustHistoryAll(t, st, th.ID)))
	assert.False(t, got.UpdatedAt.Before(th.UpdatedAt), "commit bumps UpdatedAt")
	assert.Equal(t, th.CreatedAt, got.CreatedAt)
	replay, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL})
	require.NoError(t, err)
	assert.Equal(t, &rec, replay.Replay)
}

func testCommitAfterDelete(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	mustAppend(t, st, th.ID, 3)
	p := mustPause(t, st, th.ID, time.Hour)
	rec := store.Idempotency{Principal: alice, Key: "k", Fingerprint: "f"}
	claim, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
	require.NoError(t, err)

	require.NoError(t, st.DeleteThread(ctx, th.ID, alice))
	assert.ErrorIs(t, st.CommitTurn(ctx, store.Commit{
		ThreadID: th.ID, LockToken: claim.LockToken, Messages: newTestMessages(1, "late"), Consumed: p.ElicitationID, Idempotency: &rec,
	}), store.ErrNotFound)
	_, err = st.History(ctx, th.ID, alice, 10, "")
	assert.ErrorIs(t, err, store.ErrNotFound, "a late commit does not resurrect the thread")

	// Re-creating the ID starts from nothing: no history, lock, pending,
	// elicitation record or idempotency record survived the delete.
	require.NoError(t, st.CreateThread(ctx, th))
	assert.Empty(t, mustHistoryAll(t, st, th.ID))
	_, pending, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Nil(t, pending)
	assert.ErrorIs(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: claim.LockToken}), store.ErrLockLost)
	_, err = st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrElicitationNotFound)
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL})
	require.NoError(t, err)
	assert.Nil(t, ts.Replay)
}

func testConcurrentResume(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	p := mustPause(t, st, th.ID, time.Hour)

	const n = 50
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		errs     = make([]error, n)
		commitOK = make([]bool, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ts, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
			errs[i] = err
			if err != nil {
				return
			}
			commitOK[i] = st.CommitTurn(ctx, store.Commit{
				ThreadID: th.ID, LockToken: ts.LockToken, Messages: newTestMessages(2, "winner"), Consumed: p.ElicitationID,
			}) == nil
		}()
	}
	close(start)
	wg.Wait()

	winners := 0
	for i, err := range errs {
		if err == nil {
			winners++
			assert.True(t, commitOK[i], "the winner commits")
			continue
		}
		// Losers see the winner's live claim (busy) or its commit (consumed).
		if !errors.Is(err, store.ErrBusy) {
			assert.ErrorIs(t, err, store.ErrElicitationConsumed)
		}
	}
	assert.Equal(t, 1, winners)
	assert.Equal(t, []string{"ask-0", "ask-1", "winner-0", "winner-1"}, messageTexts(mustHistoryAll(t, st, th.ID)))
}

func testConcurrentTurns(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)

	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
				if errors.Is(err, store.ErrBusy) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					errs[i] = err
					return
				}
				errs[i] = st.CommitTurn(ctx, store.Commit{
					ThreadID: th.ID, LockToken: ts.LockToken, Messages: newTestMessages(2, fmt.Sprint("turn", i)),
				})
				return
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "turn %d", i)
	}

	history := mustHistoryAll(t, st, th.ID)
	require.Len(t, history, 2*n)
	seen := make(map[string]bool)
	for i := 0; i < len(history); i += 2 {
		first, second := history[i].Text, history[i+1].Text
		var turn int
		_, err := fmt.Sscanf(first, "turn%d-0", &turn)
		require.NoError(t, err, "message %d is %q, not a turn's first message", i, first)
		assert.Equal(t, fmt.Sprintf("turn%d-1", turn), second, "turn %d's messages are adjacent", turn)
		assert.False(t, seen[first], "turn %d appears once", turn)
		seen[first] = true
	}
	assert.Len(t, seen, n)
}

// testHistoryAtScale pages and windows a history long enough to be trimmed
// across many of Redis' 32-message chunks, in turns of uneven sizes, with
// some IDs out of order (minted by an instance whose clock was behind):
// every message is a valid cursor until trimmed, and every page and window
// holds exactly the messages it should.
func testHistoryAtScale(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	opts := testOpts
	opts.HistoryMax = 250
	st := newStore(t, opts)
	th := mustCreateThread(t, st)

	var all []blocks.Message
	for turn := 0; len(all) < 330; turn++ {
		msgs := newTestMessages(1+turn%7, fmt.Sprint("t", turn))
		for i := range msgs {
			if (len(all)+i)%5 == 3 {
				// A UUIDv7 whose timestamp is far behind the others'.
				msgs[i].ID = fmt.Sprintf("%08x", turn) + msgs[i].ID[8:]
			}
		}
		mustTurn(t, st, th.ID, msgs)
		all = append(all, msgs...)
	}
	kept := all[len(all)-opts.HistoryMax:]
	assert.Equal(t, messageTexts(kept), messageTexts(mustHistoryAll(t, st, th.ID)))

	for _, limit := range []int{1, 7, 32, 33, 200} {
		for i := len(kept) - 1; i >= 0; i -= 1 + i%13 {
			page, err := st.History(ctx, th.ID, alice, limit, kept[i].ID)
			require.NoError(t, err, "before message %d", i)
			want := kept[max(i-limit, 0):i]
			assert.Equal(t, messageTexts(want), messageTexts(page.Messages), "limit %d before message %d", limit, i)
			if i-limit > 0 {
				assert.Equal(t, want[0].ID, page.NextBefore)
			} else {
				assert.Empty(t, page.NextBefore)
			}
		}
	}
	for _, gone := range all[:len(all)-opts.HistoryMax] {
		_, err := st.History(ctx, th.ID, alice, 10, gone.ID)
		assert.ErrorIs(t, err, store.ErrUnknownCursor, "a trimmed message is no cursor")
	}
	for _, n := range []int{1, 31, 32, 33, 250, 400} {
		ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Window: n})
		require.NoError(t, err)
		got, err := ts.History.Decode()
		require.NoError(t, err)
		assert.Equal(t, messageTexts(kept[max(len(kept)-n, 0):]), messageTexts(got), "window %d", n)
		require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
	}
}
