package store

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
)

// TestMemoryUsageCountsEverything: the embedded store's bound counts turn
// logs and idempotency records, not only history. Turns whose logs and
// records fill it make new work ErrFull while reads still work; what has
// expired is dropped by the sweep, making room; a deleted thread releases
// everything it held.
func TestMemoryUsageCountsEverything(t *testing.T) {
	const bound, size = 1 << 20, 200 << 10
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMemory(Options{MemoryMaxBytes: bound, TurnEventsTTL: 10 * time.Minute, IdempotencyTTL: time.Hour})
	m.now = func() time.Time { return clock }
	ctx := context.Background()
	owner, threadID := "alice", blocks.NewID()
	require.NoError(t, m.CreateThread(ctx, Thread{ID: threadID, Owner: owner, Processor: "echo"}))
	big := bytes.Repeat([]byte("x"), size)

	// What a client sets on the thread counts too.
	bare := m.usage.used
	value := strings.Repeat("m", 3000)
	_, err := m.UpdateThread(ctx, threadID, owner, ThreadPatch{Metadata: map[string]*string{"notes": &value}})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, m.usage.used-bare, int64(len(value)), "metadata is counted")

	// turn runs a turn that streams one big event and ends with another
	// (and, with record, an idempotency record as big), but writes no
	// history.
	turn := func(record bool) (string, error) {
		turnID := blocks.NewID()
		start, err := m.BeginTurn(ctx, BeginTurn{ThreadID: threadID, Principal: owner, LockTTL: time.Minute,
			Turn: TurnBegin{ID: turnID, Start: TurnEvent{ID: 1, Name: "turn.started", Data: []byte(`{}`)}}})
		if err != nil {
			return "", err
		}
		require.NoError(t, m.AppendTurnEvents(ctx, threadID, turnID, []TurnEvent{{ID: 2, Name: "text.delta", Data: big}}))
		c := Commit{ThreadID: threadID, LockToken: start.LockToken, TurnID: turnID,
			Events: []TurnEvent{{ID: 3, Name: "turn.completed", Data: big, Last: true}}}
		if record {
			c.Idempotency = &Idempotency{Principal: owner, Key: blocks.NewID(), Result: big}
		}
		require.NoError(t, m.CommitTurn(ctx, c))
		return turnID, nil
	}
	// fill runs turns until the store is full and returns the last turn.
	fill := func(record bool) string {
		var last string
		for n := 0; ; n++ {
			require.Less(t, n, 2*bound/size, "the store never filled")
			id, err := turn(record)
			if err != nil {
				require.ErrorIs(t, err, ErrFull)
				return last
			}
			last = id
		}
	}
	last := fill(false)
	assert.ErrorIs(t, m.CreateThread(ctx, Thread{ID: blocks.NewID(), Owner: "bob", Processor: "echo"}), ErrFull)
	assert.LessOrEqual(t, m.usage.used, int64(bound+3*size+4096), "the store holds at most the bound and one turn")

	// Reads still work.
	_, _, err = m.GetThread(ctx, threadID, owner)
	require.NoError(t, err)
	events, ended, err := m.TurnEvents(ctx, threadID, owner, last, 0, 0)
	require.NoError(t, err)
	assert.True(t, ended)
	assert.Len(t, events, 3)

	// Once the logs have expired, the sweep drops them, making room; and
	// idempotency records fill the store too, until they expire.
	clock = clock.Add(11 * time.Minute)
	_, err = turn(false)
	require.NoError(t, err, "expired logs were dropped")
	fill(true)
	clock = clock.Add(2 * time.Hour)
	_, err = turn(false)
	require.NoError(t, err, "expired logs and idempotency records were dropped")
	assert.Less(t, m.usage.used, int64(3*size), "only the last turn's log is held")

	require.NoError(t, m.DeleteThread(ctx, threadID, owner))
	assert.Zero(t, m.usage.used, "a deleted thread releases everything it held")
}
