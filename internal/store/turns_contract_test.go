package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/store"
)

// newTestTurn is a turn to begin: its ID and first event.
func newTestTurn(fingerprint string) store.TurnBegin {
	return store.TurnBegin{ID: blocks.NewID(), Fingerprint: fingerprint,
		Start: store.TurnEvent{ID: 1, Name: "message.start", Data: []byte(`{"n":1}`)}}
}

func testEvent(id int, name string) store.TurnEvent {
	return store.TurnEvent{ID: id, Name: name, Data: []byte(fmt.Sprintf(`{"n":%d}`, id))}
}

// testLastEvent is a turn's last event: its log ends with it.
func testLastEvent(id int, name string) store.TurnEvent {
	e := testEvent(id, name)
	e.Last = true
	return e
}

// testTurnLog: a begin logs the first event, appends and the commit add the
// rest in order, readers get what follows an ID, and the log is the
// principal's only.
func testTurnLog(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	turn := newTestTurn("")
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Turn: turn})
	require.NoError(t, err)

	got, ended, err := st.TurnEvents(ctx, th.ID, alice, turn.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.TurnEvent{turn.Start}, got)
	assert.False(t, ended, "the turn runs")

	require.NoError(t, st.AppendTurnEvents(ctx, th.ID, turn.ID, []store.TurnEvent{testEvent(2, "text.delta"), testEvent(3, "text.delta")}))
	// An event already logged (a re-sent append) is not logged twice.
	require.NoError(t, st.AppendTurnEvents(ctx, th.ID, turn.ID, []store.TurnEvent{testEvent(3, "text.delta")}))
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, Owner: alice, LockToken: ts.LockToken, TurnID: turn.ID, Start: turn.Start,
		Messages: newTestMessages(2, "q"), Events: []store.TurnEvent{testEvent(4, "text.delta"), testLastEvent(5, "turn.completed")}}))

	got, ended, err = st.TurnEvents(ctx, th.ID, alice, turn.ID, 2, time.Second)
	require.NoError(t, err)
	assert.Equal(t, []store.TurnEvent{testEvent(3, "text.delta"), testEvent(4, "text.delta"), testLastEvent(5, "turn.completed")}, got)
	assert.True(t, got[len(got)-1].Last)
	assert.True(t, ended)

	// After the last event an ended log answers at once (the wait would
	// outlast the test), with nothing.
	got, ended, err = st.TurnEvents(ctx, th.ID, alice, turn.ID, 5, time.Hour)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.True(t, ended)

	_, _, err = st.TurnEvents(ctx, th.ID, bob, turn.ID, 0, 0)
	assert.ErrorIs(t, err, store.ErrNotFound, "another principal's thread")
	_, _, err = st.TurnEvents(ctx, th.ID, alice, blocks.NewID(), 0, 0)
	assert.ErrorIs(t, err, store.ErrTurnNotFound, "an unknown turn")

	// A failed turn's error event rides its release.
	failed := newTestTurn("")
	ts, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Turn: failed})
	require.NoError(t, err)
	require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken, TurnID: failed.ID, Start: failed.Start,
		Events: []store.TurnEvent{testLastEvent(2, "error")}}))
	got, _, err = st.TurnEvents(ctx, th.ID, alice, failed.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.TurnEvent{failed.Start, testLastEvent(2, "error")}, got)

	// A resume logs its turn like a plain one.
	p := mustPause(t, st, th.ID, time.Hour)
	resumed := newTestTurn("")
	claim, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL, Turn: resumed})
	require.NoError(t, err)
	require.Equal(t, resumed.ID, claim.Thread.Running.ID)
	got, _, err = st.TurnEvents(ctx, th.ID, alice, resumed.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.TurnEvent{resumed.Start}, got)
}

// testTurnLogLast: the store reads no event names: the event marked Last
// ends its turn's log, whatever it is called, whether an append, a commit
// or a release brings it, and an event not marked does not end the log.
func testTurnLogLast(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	ends := []struct {
		name string
		end  func(ts store.TurnStart, turn store.TurnBegin, events []store.TurnEvent) error
	}{
		{"append", func(_ store.TurnStart, turn store.TurnBegin, events []store.TurnEvent) error {
			return st.AppendTurnEvents(ctx, th.ID, turn.ID, events)
		}},
		{"commit", func(ts store.TurnStart, turn store.TurnBegin, events []store.TurnEvent) error {
			return st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, Owner: alice, LockToken: ts.LockToken, TurnID: turn.ID, Start: turn.Start,
				Messages: newTestMessages(2, "q"), Events: events})
		}},
		{"release", func(ts store.TurnStart, turn store.TurnBegin, events []store.TurnEvent) error {
			return st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken, TurnID: turn.ID, Start: turn.Start, Events: events})
		}},
	}
	for _, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			turn := newTestTurn("")
			ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Turn: turn})
			require.NoError(t, err)
			require.NoError(t, st.AppendTurnEvents(ctx, th.ID, turn.ID, []store.TurnEvent{testEvent(2, "finished")}))
			got, ended, err := st.TurnEvents(ctx, th.ID, alice, turn.ID, 1, 0)
			require.NoError(t, err)
			assert.Equal(t, []store.TurnEvent{testEvent(2, "finished")}, got)
			assert.False(t, ended, "an event not marked Last ends nothing")

			require.NoError(t, end.end(ts, turn, []store.TurnEvent{testEvent(3, "text.delta"), testLastEvent(4, "finished")}))
			got, ended, err = st.TurnEvents(ctx, th.ID, alice, turn.ID, 2, time.Hour)
			require.NoError(t, err)
			assert.Equal(t, []store.TurnEvent{testEvent(3, "text.delta"), testLastEvent(4, "finished")}, got)
			assert.True(t, ended)
			if end.name == "append" {
				require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
			}
		})
	}
}

// testTurnLogFollow: a reader waiting on a running turn's log wakes with the
// events appended after it started waiting.
func testTurnLogFollow(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	turn := newTestTurn("")
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Turn: turn})
	require.NoError(t, err)

	type read struct {
		events []store.TurnEvent
		err    error
	}
	done := make(chan read, 1)
	go func() {
		var r read
		// Waits until something arrives: the wait is far longer than the test.
		r.events, _, r.err = st.TurnEvents(ctx, th.ID, alice, turn.ID, 1, time.Minute)
		done <- r
	}()
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, Owner: alice, LockToken: ts.LockToken, TurnID: turn.ID, Start: turn.Start,
		Messages: newTestMessages(2, "q"), Events: []store.TurnEvent{testLastEvent(2, "turn.completed")}}))
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, []store.TurnEvent{testLastEvent(2, "turn.completed")}, r.events)
}

// testTurnLogExpiry: a turn's log lives TurnEventsTTL after the turn ends.
func testTurnLogExpiry(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	opts := testOpts
	opts.TurnEventsTTL = shortTTL
	st := newStore(t, opts)
	th := mustCreateThread(t, st)
	turn := newTestTurn("")
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Turn: turn})
	require.NoError(t, err)
	ended := time.Now()
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, Owner: alice, LockToken: ts.LockToken, TurnID: turn.ID, Start: turn.Start,
		Messages: newTestMessages(2, "q"), Events: []store.TurnEvent{testLastEvent(2, "turn.completed")}}))
	_, _, err = st.TurnEvents(ctx, th.ID, alice, turn.ID, 0, 0)
	// Readable right after the turn — unless the machine took the log's
	// whole lifetime to ask, which is no fault of the store.
	if time.Since(ended) < shortTTL {
		require.NoError(t, err, "readable right after the turn")
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, _, err := st.TurnEvents(ctx, th.ID, alice, turn.ID, 0, 0)
		assert.ErrorIs(c, err, store.ErrTurnNotFound)
	}, 30*time.Second, 20*time.Millisecond)
}

// testRunningTurn: a thread shows the turn holding it; a retry with the
// same idempotency key finds that turn instead of a plain busy.
func testRunningTurn(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	assert.Nil(t, th.Running, "no turn yet")

	turn := newTestTurn("fp-1")
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL, Turn: turn})
	require.NoError(t, err)
	require.NotNil(t, ts.Thread.Running)
	assert.Equal(t, turn.ID, ts.Thread.Running.ID)

	got, _, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	require.NotNil(t, got.Running)
	assert.Equal(t, turn.ID, got.Running.ID)
	assert.WithinDuration(t, time.Now(), got.Running.StartedAt, time.Minute)

	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL, Turn: newTestTurn("fp-1")})
	var running *store.RunningError
	require.ErrorAs(t, err, &running)
	assert.ErrorIs(t, err, store.ErrBusy)
	assert.Equal(t, store.RunningError{TurnID: turn.ID, Fingerprint: "fp-1"}, *running)

	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "other", LockTTL: lockTTL, Turn: newTestTurn("")})
	assert.ErrorIs(t, err, store.ErrBusy)
	assert.False(t, errorAs[*store.RunningError](err), "another key is plainly busy")

	require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken, TurnID: turn.ID, Start: turn.Start}))
	got, _, err = st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Nil(t, got.Running, "released")
	// A turn released with no last event keeps no log, so a reader is not
	// kept waiting for events that will never come.
	_, _, err = st.TurnEvents(ctx, th.ID, alice, turn.ID, 0, time.Hour)
	assert.ErrorIs(t, err, store.ErrTurnNotFound)
}

func errorAs[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// testUpdateThread: title set and cleared, metadata merged, limits refused
// with nothing changed, another principal's thread not found.
func testUpdateThread(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	th := mustCreateThread(t, st)
	str := func(s string) *string { return &s }

	got, err := st.UpdateThread(ctx, th.ID, alice, store.ThreadPatch{SetTitle: true, Title: str("Plans"),
		Metadata: map[string]*string{"a": str("1"), "b": str("2")}})
	require.NoError(t, err)
	assert.Equal(t, "Plans", *got.Title)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, got.Metadata)
	assert.False(t, got.UpdatedAt.Before(th.UpdatedAt))

	got, err = st.UpdateThread(ctx, th.ID, alice, store.ThreadPatch{Metadata: map[string]*string{"a": nil, "c": str("3")}})
	require.NoError(t, err)
	assert.Equal(t, "Plans", *got.Title, "a patch without a title keeps it")
	assert.Equal(t, map[string]string{"b": "2", "c": "3"}, got.Metadata)

	tooMany := map[string]*string{}
	for i := range store.MaxMetadataKeys {
		tooMany[fmt.Sprintf("k%d", i)] = str("v")
	}
	_, err = st.UpdateThread(ctx, th.ID, alice, store.ThreadPatch{SetTitle: true, Metadata: tooMany})
	assert.ErrorIs(t, err, store.ErrMetadataTooLarge, "16 new keys beside 2 kept")
	_, err = st.UpdateThread(ctx, th.ID, alice, store.ThreadPatch{Metadata: map[string]*string{"big": str(string(make([]byte, store.MaxMetadataBytes)))}})
	assert.ErrorIs(t, err, store.ErrMetadataTooLarge)

	read, _, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Equal(t, "Plans", *read.Title, "a refused patch changes nothing")
	assert.Equal(t, map[string]string{"b": "2", "c": "3"}, read.Metadata)

	got, err = st.UpdateThread(ctx, th.ID, alice, store.ThreadPatch{SetTitle: true, ClearMetadata: true})
	require.NoError(t, err)
	assert.Nil(t, got.Title)
	assert.Empty(t, got.Metadata)

	_, err = st.UpdateThread(ctx, th.ID, bob, store.ThreadPatch{SetTitle: true, Title: str("mine")})
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// testListThreads: most recently updated first, paged by cursor with no
// thread twice or missed, each principal's own, deleted threads gone, and
// the preview of the first user message.
func testListThreads(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	st := newStore(t, testOpts)
	// Principals of this test alone: the Redis suites share one server.
	alice, bob := "lister-"+blocks.NewID(), "lister-"+blocks.NewID()
	var ids []string
	for range 7 {
		th := store.Thread{ID: blocks.NewID(), Owner: alice, Processor: "echo"}
		require.NoError(t, st.CreateThread(ctx, th))
		ids = append(ids, th.ID)
	}
	require.NoError(t, st.CreateThread(ctx, store.Thread{ID: blocks.NewID(), Owner: bob, Processor: "echo"}))

	// A turn on the oldest thread makes it the most recently updated.
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: ids[0], Principal: alice, LockTTL: lockTTL, Turn: newTestTurn("")})
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond) // updated_at is kept to the millisecond
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: ids[0], Owner: alice, LockToken: ts.LockToken,
		Messages: newTestMessages(2, "q"), Preview: "first words"}))
	require.NoError(t, st.DeleteThread(ctx, ids[3], alice))

	var listed []string
	cursor := ""
	for page := 0; ; page++ {
		require.Less(t, page, 10, "paging ends")
		list, err := st.ListThreads(ctx, alice, 2, cursor)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(list.Threads), 2)
		for _, ts := range list.Threads {
			listed = append(listed, ts.Thread.ID)
			assert.Equal(t, alice, ts.Thread.Owner)
		}
		if list.Next == "" {
			break
		}
		cursor = list.Next
	}
	require.Len(t, listed, 6, "alice's threads, the deleted one gone")
	assert.Equal(t, ids[0], listed[0], "the thread with the latest turn first")
	assert.NotContains(t, listed, ids[3])

	first, err := st.ListThreads(ctx, alice, 1, "")
	require.NoError(t, err)
	assert.Equal(t, "first words", first.Threads[0].Thread.Preview)

	bobs, err := st.ListThreads(ctx, bob, 100, "")
	require.NoError(t, err)
	assert.Len(t, bobs.Threads, 1)
	assert.Empty(t, bobs.Next)

	_, err = st.ListThreads(ctx, alice, 2, "not a cursor")
	assert.ErrorIs(t, err, store.ErrUnknownCursor)
}
