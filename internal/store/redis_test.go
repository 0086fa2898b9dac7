package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// newTestRedisFunc returns a constructor of Redis stores on srv, each with
// its own client.
func newTestRedisFunc(srv *redistest.Server) newStoreFunc {
	return func(tb testing.TB, opts store.Options) contractStore {
		tb.Helper()
		return newTestRedis(tb, srv, &redis.Options{Addr: srv.Addr()}, opts)
	}
}

// newServerClient returns a plain client on srv, for a test to look at or
// change what a store keeps; it is closed with the test.
func newServerClient(tb testing.TB, srv *redistest.Server) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func newTestRedis(tb testing.TB, srv *redistest.Server, o *redis.Options, opts store.Options) *store.Redis {
	tb.Helper()
	st := store.NewRedis(redis.NewClient(o), opts)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

func TestRedisContract(t *testing.T) {
	runContract(t, newTestRedisFunc(redistest.Start(t)))
}

// TestRedisKeys checks the key layout the package documentation promises:
// every key of a thread carries its hash tag and a TTL, and DeleteThread
// leaves none behind.
func TestRedisKeys(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := newServerClient(t, srv)
	opts := testOpts
	opts.ThreadTTL = time.Hour
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, opts)

	th := mustCreateThread(t, st)
	p := mustPause(t, st, th.ID, 10*time.Minute)
	claim, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
	require.NoError(t, err)
	next := newTestPending(10 * time.Minute)
	require.NoError(t, st.CommitTurn(ctx, store.Commit{
		ThreadID: th.ID, LockToken: claim.LockToken, Messages: newTestMessages(2, "a"),
		Consumed: p.ElicitationID, Pause: &next,
		Idempotency: &store.Idempotency{Principal: alice, Key: "k", Fingerprint: "f"},
	}))
	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: blocks.NewID(), Principal: alice, LockTTL: lockTTL})
	require.ErrorIs(t, err, store.ErrNotFound, "a missing thread gets no keys, not even a lock")
	other := mustCreateThread(t, st)

	prefix := "chatd:{" + th.ID + "}:"
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	for _, suffix := range []string{"thread", "history", "pending", "elicitations", "idem", "idemexp"} {
		assert.Contains(t, keys, prefix+suffix)
	}
	for _, k := range keys {
		ttl, err := rdb.PTTL(ctx, k).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Duration(0), "%s has a TTL", k)
		limit := opts.ThreadTTL
		if strings.HasSuffix(k, ":pending") {
			limit = 10 * time.Minute
		}
		assert.LessOrEqual(t, ttl, limit, "%s", k)
	}

	// Cluster hashes only the part between the first { and the next }: every
	// key of the thread hashes its ID, so all land in one slot.
	for _, k := range keys {
		open := strings.Index(k, "{")
		end := strings.Index(k[open:], "}")
		require.True(t, open >= 0 && end > 0, "%s has a hash tag", k)
		assert.Equal(t, th.ID, k[open+1:open+end], "%s hash tag", k)
	}

	require.NoError(t, st.DeleteThread(ctx, th.ID, alice))
	keys, err = rdb.Keys(ctx, "chatd:{*}:thread").Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"chatd:{" + other.ID + "}:thread"}, keys)
	// The owner's thread index lists what is left, under a hash tag of its own.
	index, err := rdb.Keys(ctx, "chatd:{p:*}:threads").Result()
	require.NoError(t, err)
	require.Len(t, index, 1)
	listed, err := rdb.ZRange(ctx, index[0], 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{other.ID}, listed)
}

// countingHook counts the commands and pipelines a client sends: each is one
// round trip.
type countingHook struct{ trips atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		return next(ctx, cmds)
	}
}

// TestRedisRoundTrips holds a turn's store work to its budget: one round
// trip to begin, one to commit or release.
func TestRedisRoundTrips(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	hook := &countingHook{}
	client.AddHook(hook)
	st := store.NewRedis(client, testOpts)
	t.Cleanup(func() { _ = st.Close() })

	// Warm up: the first run of each script on a server costs an extra
	// EVALSHA that answers NOSCRIPT.
	warm := mustCreateThread(t, st)
	p := mustPause(t, st, warm.ID, time.Hour)
	claim, err := st.BeginResume(ctx, store.BeginResume{ThreadID: warm.ID, Principal: alice, ElicitationID: p.ElicitationID, LockTTL: lockTTL})
	require.NoError(t, err)
	require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: warm.ID, LockToken: claim.LockToken}))
	_, err = st.History(ctx, warm.ID, alice, 10, "")
	require.NoError(t, err)
	require.NoError(t, st.AppendTurnEvents(ctx, warm.ID, claim.Thread.ID, nil))
	require.NoError(t, st.DeleteThread(ctx, warm.ID, alice))

	th := store.Thread{ID: blocks.NewID(), Owner: alice, Processor: "echo"}
	var (
		begin store.TurnStart
		pause = newTestPending(time.Hour)
		turn  = newTestTurn("")
	)
	tests := []struct {
		name string
		op   func() error
	}{
		{"CreateThread", func() error { return st.CreateThread(ctx, th) }},
		{"GetThread", func() error { _, _, err := st.GetThread(ctx, th.ID, alice); return err }},
		{"BeginTurn", func() error {
			var err error
			begin, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Window: 50, Turn: turn})
			return err
		}},
		{"AppendTurnEvents", func() error {
			return st.AppendTurnEvents(ctx, th.ID, turn.ID, []store.TurnEvent{testEvent(2, "text.delta"), testEvent(3, "text.delta")})
		}},
		{"CommitTurn, its events and the owner's thread index", func() error {
			return st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, Owner: alice, LockToken: begin.LockToken, Messages: newTestMessages(2, "q"), Pause: &pause,
				Idempotency: &store.Idempotency{Principal: alice, Key: "k", Fingerprint: "f"},
				TurnID:      turn.ID, Events: []store.TurnEvent{testLastEvent(4, "turn.completed")}, Preview: "q"})
		}},
		{"BeginResume", func() error {
			var err error
			begin, err = st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: pause.ElicitationID, LockTTL: lockTTL, Window: 50})
			return err
		}},
		{"Release", func() error { return st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: begin.LockToken}) }},
		{"BeginResume again", func() error {
			var err error
			begin, err = st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: pause.ElicitationID, LockTTL: lockTTL, Window: 50})
			return err
		}},
		{"CommitTurn consuming", func() error {
			return st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: begin.LockToken, Messages: newTestMessages(2, "a"), Consumed: pause.ElicitationID})
		}},
		{"History", func() error { _, err := st.History(ctx, th.ID, alice, 2, ""); return err }},
		{"DeleteThread", func() error { return st.DeleteThread(ctx, th.ID, alice) }},
	}
	for _, tt := range tests {
		before := hook.trips.Load()
		require.NoError(t, tt.op(), tt.name)
		assert.Equal(t, int64(1), hook.trips.Load()-before, "%s round trips", tt.name)
	}
}

// TestRedisOutage stops the server under a store: every operation reports
// ErrUnavailable, and once the server is back the same store works again.
func TestRedisOutage(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	st := newTestRedis(t, srv, &redis.Options{
		Addr:          srv.Addr(),
		DialTimeout:   200 * time.Millisecond,
		ReadTimeout:   200 * time.Millisecond,
		WriteTimeout:  200 * time.Millisecond,
		PoolTimeout:   200 * time.Millisecond,
		MaxRetries:    -1, // no retries: fail fast
		DialerRetries: 1,
	}, testOpts)
	th := mustCreateThread(t, st)
	ts := mustBegin(t, st, th.ID, 0)

	srv.Stop(t)
	tests := []struct {
		name string
		op   func() error
	}{
		{"Ping", func() error { return st.Ping(ctx) }},
		{"CreateThread", func() error { return st.CreateThread(ctx, store.Thread{ID: blocks.NewID(), Owner: alice}) }},
		{"GetThread", func() error { _, _, err := st.GetThread(ctx, th.ID, alice); return err }},
		{"BeginTurn", func() error {
			_, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
			return err
		}},
		{"BeginResume", func() error {
			_, err := st.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: "e", LockTTL: lockTTL})
			return err
		}},
		{"CommitTurn", func() error {
			return st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Messages: newTestMessages(1, "x")})
		}},
		{"Release", func() error { return st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}) }},
		{"History", func() error { _, err := st.History(ctx, th.ID, alice, 10, ""); return err }},
		{"DeleteThread", func() error { return st.DeleteThread(ctx, th.ID, alice) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			assert.ErrorIs(t, err, store.ErrUnavailable)
			assert.False(t, errors.Is(err, store.ErrNotFound), "an outage is not a missing thread")
			assert.True(t, hasCause(err), "the cause stays in the chain for the logs: %v", err)
		})
	}

	srv.Restart(t)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, st.Ping(ctx))
	}, 10*time.Second, 50*time.Millisecond)
	// Persistence is off, so the old thread is gone; a new one works.
	_, _, err := st.GetThread(ctx, th.ID, alice)
	assert.ErrorIs(t, err, store.ErrNotFound)
	fresh := mustCreateThread(t, st)
	mustTurn(t, st, fresh.ID, newTestMessages(2, "after"))
	assert.Equal(t, []string{"after-0", "after-1"}, messageTexts(mustHistoryAll(t, st, fresh.ID)))
}

// hasCause reports whether err wraps an error other than ErrUnavailable
// beside it.
func hasCause(err error) bool {
	multi, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if next := errors.Unwrap(err); next != nil {
			return hasCause(next)
		}
		return false
	}
	for _, e := range multi.Unwrap() {
		if e != store.ErrUnavailable {
			return true
		}
	}
	return false
}

// TestRedisCancelledContext checks that a request the caller cancelled is not
// reported as an outage.
func TestRedisCancelledContext(t *testing.T) {
	srv := redistest.Start(t)
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, testOpts)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := st.GetThread(ctx, blocks.NewID(), alice)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, errors.Is(err, store.ErrUnavailable))
}

func TestOpenRedis(t *testing.T) {
	srv := redistest.Start(t)
	tests := []struct {
		name    string
		url     string
		wantErr bool
	}{
		{"single node", srv.URL(), false},
		{"options", srv.URL() + "?dial_timeout=1s&pool_size=4", false},
		{"tls scheme", "rediss://127.0.0.1:1/0", false},
		{"cluster by comma", "redis://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", false},
		{"cluster by addr", "redis://127.0.0.1:1?addr=127.0.0.1:2", false},
		{"sentinel", "redis://127.0.0.1:1,127.0.0.1:2/0?master_name=mymaster", false},
		{"bad scheme", "http://127.0.0.1:1", true},
		{"unknown option", srv.URL() + "?frobnicate=1", true},
		{"bad db", "redis://127.0.0.1:1/x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := store.OpenRedis(tt.url, testOpts)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.NoError(t, st.Close())
		})
	}

	st, err := store.OpenRedis(srv.URL(), testOpts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Ping(context.Background()))
	th := mustCreateThread(t, st)
	mustTurn(t, st, th.ID, newTestMessages(1, "x"))
}

// TestRedisClusterContract runs the contract suite through a ClusterClient
// on a Cluster of three masters with a replica each: every script must name
// keys of one slot only, or Redis refuses it with CROSSSLOT, and threads
// land on all three masters.
//
// Commits wait for one replica (Options.WaitReplicas), so the suite also
// runs the WAIT pipelined on the master of each thread's slot.
func TestRedisClusterContract(t *testing.T) {
	c := redistest.StartCluster(t)
	runContract(t, func(tb testing.TB, opts store.Options) contractStore {
		tb.Helper()
		opts.WaitReplicas = 1
		st, err := store.OpenRedis(c.URL(), opts)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = st.Close() })
		return st
	})
}

// TestRedisSentinelContract runs the contract suite through a client that
// finds the master through three Sentinels; commits wait for the replica.
func TestRedisSentinelContract(t *testing.T) {
	s := redistest.StartSentinel(t)
	runContract(t, func(tb testing.TB, opts store.Options) contractStore {
		tb.Helper()
		opts.WaitReplicas = 1
		st, err := store.OpenRedis(s.URL(), opts)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = st.Close() })
		return st
	})
}

// TestRedisWaitReplicas checks CHATD_REDIS_WAIT_REPLICAS' store side: a
// write is acknowledged once a replica has it, in the same single round
// trip; without the replica it is ErrUnavailable (the master keeps it, the
// outcome is unknown to the client).
func TestRedisWaitReplicas(t *testing.T) {
	ctx := context.Background()
	master, err := redistest.Launch(ctx, redistest.Options{Args: []string{"--repl-diskless-sync-delay", "0"}})
	require.NoError(t, err)
	t.Cleanup(master.Stop)
	port := strconv.Itoa(master.Port())
	replica, err := redistest.Launch(ctx, redistest.Options{Args: []string{"--replicaof", "127.0.0.1", port}})
	require.NoError(t, err)
	t.Cleanup(replica.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: master.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		info, err := rdb.Info(ctx, "replication").Result()
		require.NoError(c, err)
		assert.Contains(c, info, "state=online")
	}, 10*time.Second, 20*time.Millisecond)

	opts := testOpts
	opts.WaitReplicas = 1
	client := redis.NewClient(&redis.Options{Addr: master.Addr()})
	hook := &countingHook{}
	client.AddHook(hook)
	st := store.NewRedis(client, opts)
	t.Cleanup(func() { _ = st.Close() })

	th := mustCreateThread(t, st)
	mustTurn(t, st, th.ID, newTestMessages(2, "kept")) // loads the script
	ts := mustBegin(t, st, th.ID, 0)
	before := hook.trips.Load()
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Messages: newTestMessages(2, "acked")}))
	assert.Equal(t, int64(1), hook.trips.Load()-before, "the commit and its WAIT are one round trip")
	replicaRdb := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	t.Cleanup(func() { _ = replicaRdb.Close() })
	n, err := replicaRdb.Exists(ctx, "chatd:{"+th.ID+"}:thread").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "an acknowledged commit is on the replica")

	replica.Stop()
	opts.WaitTimeout = 100 * time.Millisecond
	lonely := store.NewRedis(redis.NewClient(&redis.Options{Addr: master.Addr()}), opts)
	t.Cleanup(func() { _ = lonely.Close() })
	ts = mustBegin(t, lonely, th.ID, 0)
	err = lonely.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Messages: newTestMessages(2, "unsure")})
	require.ErrorIs(t, err, store.ErrUnavailable)
	assert.Contains(t, err.Error(), "acknowledged by 0 of 1 replicas")
	// The master has the commit; only its survival was not confirmed.
	assert.Equal(t, []string{"kept-0", "kept-1", "acked-0", "acked-1", "unsure-0", "unsure-1"}, messageTexts(mustHistoryAll(t, lonely, th.ID)))
	err = lonely.CreateThread(ctx, store.Thread{ID: blocks.NewID(), Owner: alice})
	assert.ErrorIs(t, err, store.ErrUnavailable, "a created thread waits too")
}

func TestOpenRedisWaitTimeout(t *testing.T) {
	opts := testOpts
	opts.WaitReplicas = 1
	opts.WaitTimeout = 5 * time.Second
	_, err := store.OpenRedis("redis://127.0.0.1:1/0", opts)
	assert.ErrorContains(t, err, "read timeout")
	st, err := store.OpenRedis("redis://127.0.0.1:1/0?read_timeout=10s", opts)
	require.NoError(t, err)
	assert.NoError(t, st.Close())
}

// TestRedisEarlierHistoryLayout checks that a thread whose history was
// written by the earlier layout (a sorted set of IDs by position and a hash
// of JSON) reads and grows as before: the first script that touches its
// history converts it.
func TestRedisEarlierHistoryLayout(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := newServerClient(t, srv)
	opts := testOpts
	opts.HistoryMax = 60
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, opts)

	for _, first := range []string{"history", "begin", "commit"} {
		t.Run(first, func(t *testing.T) {
			th := mustCreateThread(t, st)
			prefix := "chatd:{" + th.ID + "}:"
			old := newTestMessages(45, "old")
			for i, m := range old {
				b, err := json.Marshal(m)
				require.NoError(t, err)
				// Positions 11…55: the first ten were trimmed long ago.
				require.NoError(t, rdb.ZAdd(ctx, prefix+"msgs", redis.Z{Score: float64(11 + i), Member: m.ID}).Err())
				require.NoError(t, rdb.HSet(ctx, prefix+"msgdata", m.ID, b).Err())
			}
			require.NoError(t, rdb.HSet(ctx, prefix+"thread", "seq", 55).Err())

			switch first {
			case "history":
				page, err := st.History(ctx, th.ID, alice, 10, old[20].ID)
				require.NoError(t, err)
				assert.Equal(t, messageTexts(old[10:20]), messageTexts(page.Messages))
			case "begin":
				ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Window: 5})
				require.NoError(t, err)
				got, err := ts.History.Decode()
				require.NoError(t, err)
				assert.Equal(t, messageTexts(old[40:]), messageTexts(got))
				require.NoError(t, st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken}))
			case "commit":
			}
			added := newTestMessages(20, "new")
			mustTurn(t, st, th.ID, added)

			n, err := rdb.Exists(ctx, prefix+"msgs", prefix+"msgdata").Result()
			require.NoError(t, err)
			assert.Zero(t, n, "the earlier layout's keys are gone")
			// 65 messages, capped at 60.
			all := append(old, added...)
			assert.Equal(t, messageTexts(all[5:]), messageTexts(mustHistoryAll(t, st, th.ID)))
			page, err := st.History(ctx, th.ID, alice, 3, old[8].ID)
			require.NoError(t, err)
			assert.Equal(t, messageTexts(old[5:8]), messageTexts(page.Messages))
			assert.Empty(t, page.NextBefore)
		})
	}
}

// TestRedisHistoryFieldsBounded checks that trimming takes everything of a
// message with it: a long-lived thread whose IDs are often out of order
// keeps a bounded history hash.
func TestRedisHistoryFieldsBounded(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := newServerClient(t, srv)
	opts := testOpts
	opts.HistoryMax = 100
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, opts)
	th := mustCreateThread(t, st)
	for turn := range 400 {
		msgs := newTestMessages(5, fmt.Sprint("t", turn))
		msgs[2].ID = fmt.Sprintf("%08x", turn) + msgs[2].ID[8:] // a clock far behind
		mustTurn(t, st, th.ID, msgs)
	}
	assert.Len(t, mustHistoryAll(t, st, th.ID), 100)
	fields, err := rdb.HKeys(ctx, "chatd:{"+th.ID+"}:history").Result()
	require.NoError(t, err)
	outOfOrder := 0
	for _, f := range fields {
		if strings.HasPrefix(f, "o:") {
			outOfOrder++
		}
	}
	// 100 kept, a fifth out of order; a sealed chunk keeps its trimmed
	// records, and their entries, until the whole chunk goes.
	assert.LessOrEqual(t, outOfOrder, (100+31)/5+1)
	assert.LessOrEqual(t, len(fields), 2*(100+31)+2*(100/32+2))
}

// TestRedisTurnLogForms: a turn's log is a stream only when something needs
// more than its first event while it runs; a turn answered as one body that
// nobody followed writes its log once, as a string, when it ends. Both read
// the same.
func TestRedisTurnLogForms(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := newServerClient(t, srv)
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, testOpts)
	th := mustCreateThread(t, st)
	logType := func(turnID string) string {
		kind, err := rdb.Type(ctx, "chatd:{"+th.ID+"}:turn:"+turnID).Result()
		require.NoError(t, err)
		return kind
	}
	run := func(follow bool) (store.TurnBegin, string) {
		turn := newTestTurn("")
		ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Turn: turn})
		require.NoError(t, err)
		require.Equal(t, "none", logType(turn.ID), "the first event lives in the lock")
		if follow {
			got, ended, err := st.TurnEvents(ctx, th.ID, alice, turn.ID, 0, 0)
			require.NoError(t, err)
			assert.Equal(t, []store.TurnEvent{turn.Start}, got)
			assert.False(t, ended)
		}
		require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, Owner: alice, LockToken: ts.LockToken, TurnID: turn.ID, Start: turn.Start,
			Messages: newTestMessages(2, "q"), Events: []store.TurnEvent{testLastEvent(2, "turn.completed")}}))
		return turn, logType(turn.ID)
	}
	for _, follow := range []bool{false, true} {
		turn, kind := run(follow)
		if follow {
			assert.Equal(t, "stream", kind, "a reader made it a stream to wait on")
		} else {
			assert.Equal(t, "string", kind, "written whole at the end")
		}
		got, ended, err := st.TurnEvents(ctx, th.ID, alice, turn.ID, 0, 0)
		require.NoError(t, err)
		assert.Equal(t, []store.TurnEvent{turn.Start, testLastEvent(2, "turn.completed")}, got)
		assert.True(t, ended)
		got, _, err = st.TurnEvents(ctx, th.ID, alice, turn.ID, 1, 0)
		require.NoError(t, err)
		assert.Equal(t, []store.TurnEvent{testLastEvent(2, "turn.completed")}, got, "after an ID")
		ttl, err := rdb.PTTL(ctx, "chatd:{"+th.ID+"}:turn:"+turn.ID).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Duration(0))
		assert.LessOrEqual(t, ttl, store.DefaultOptions.TurnEventsTTL)
	}

	// A string log takes the memory of its records, not twice that (as an
	// APPENDed string would, grown ahead by Redis for its whole life).
	turn := newTestTurn("")
	ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL, Turn: turn})
	require.NoError(t, err)
	completed := store.TurnEvent{ID: 2, Name: "turn.completed", Data: []byte(`{"text":"` + strings.Repeat("x", 4000) + `"}`), Last: true}
	require.NoError(t, st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, Owner: alice, LockToken: ts.LockToken, TurnID: turn.ID, Start: turn.Start,
		Messages: newTestMessages(2, "q"), Events: []store.TurnEvent{completed}}))
	key := "chatd:{" + th.ID + "}:turn:" + turn.ID
	size, err := rdb.StrLen(ctx, key).Result()
	require.NoError(t, err)
	used, err := rdb.MemoryUsage(ctx, key).Result()
	require.NoError(t, err)
	assert.Less(t, used, size*5/4, "%d bytes kept for a log of %d", used, size)
}

// TestRedisEarlierTurnLog: a log written before records carried the last
// flag, by an instance of the earlier version, mid-upgrade, still ends with
// its turn.completed or error event, as a string or as a stream.
func TestRedisEarlierTurnLog(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := newServerClient(t, srv)
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, testOpts)
	th := mustCreateThread(t, st)
	for _, last := range []string{"turn.completed", "error"} {
		for _, kind := range []string{"string", "stream"} {
			t.Run(last+" "+kind, func(t *testing.T) {
				turnID := blocks.NewID()
				key := "chatd:{" + th.ID + "}:turn:" + turnID
				start := "1 message.start 7\n" + `{"n":1}`
				end := "2 " + last + " 7\n" + `{"n":2}`
				if kind == "string" {
					require.NoError(t, rdb.Set(ctx, key, start+end, time.Minute).Err())
				} else {
					require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "0-1", Values: []any{"r", start}}).Err())
					require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "0-2", Values: []any{"r", start + end}}).Err())
				}
				got, ended, err := st.TurnEvents(ctx, th.ID, alice, turnID, 1, time.Hour)
				require.NoError(t, err)
				assert.Equal(t, []store.TurnEvent{testLastEvent(2, last)}, got)
				assert.True(t, ended)
			})
		}
	}
}

// TestRedisEarlierLockFormat: a lock written before the lock kept the
// turn's first event (by an instance of the earlier version, mid-upgrade)
// still names its turn, idempotency field and fingerprint, and the turn's
// log in the earlier stream format still reads.
func TestRedisEarlierLockFormat(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := newServerClient(t, srv)
	st := newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, testOpts)
	th := mustCreateThread(t, st)
	turnID := blocks.NewID()
	started := time.Now().UnixMilli()
	// The idempotency field of alice's key "k|1".
	lock := fmt.Sprintf("tok||%s|%d|fp-1|5:alice:k|1", turnID, started)
	require.NoError(t, rdb.Set(ctx, "chatd:{"+th.ID+"}:lock", lock, time.Minute).Err())

	got, _, err := st.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	require.NotNil(t, got.Running)
	assert.Equal(t, turnID, got.Running.ID)
	_, err = st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k|1", LockTTL: lockTTL, Turn: newTestTurn("fp-1")})
	var running *store.RunningError
	require.ErrorAs(t, err, &running)
	assert.Equal(t, store.RunningError{TurnID: turnID, Fingerprint: "fp-1"}, *running)

	// Its log, written in the earlier stream format (a field "<id> <name>"
	// per event), reads as any other.
	logKey := "chatd:{" + th.ID + "}:turn:" + turnID
	require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: logKey, ID: "0-1", Values: []any{"1 message.start", `{"n":1}`}}).Err())
	require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: logKey, ID: "0-3", Values: []any{"2 text.delta", `{"n":2}`, "3 text.delta", `{"n":3}`}}).Err())
	got2, ended, err := st.TurnEvents(ctx, th.ID, alice, turnID, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.TurnEvent{testEvent(2, "text.delta"), testEvent(3, "text.delta")}, got2)
	assert.False(t, ended, "its turn still holds the lock")
}
