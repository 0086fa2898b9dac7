package store_test

import (
	"context"
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

// resendHook sends every script twice on the same command and keeps the
// second reply: what go-redis does when a script's reply does not arrive
// within ReadTimeout although the script ran, without waiting for a timeout.
type resendHook struct{ resent atomic.Int64 }

func (h *resendHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *resendHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "evalsha" && name != "eval" {
			return next(ctx, cmd)
		}
		if err := next(ctx, cmd); err != nil && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err
		}
		cmd.SetErr(nil)
		err := next(ctx, cmd)
		if err == nil {
			h.resent.Add(1)
		}
		return err
	}
}

// ProcessPipelineHook sends a pipeline that holds a script twice: its other
// commands (thread index updates) must be as idempotent as the scripts.
func (h *resendHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		scripted := false
		for _, cmd := range cmds {
			if name := cmd.Name(); name == "evalsha" || name == "eval" {
				scripted = true
			}
		}
		if !scripted {
			return next(ctx, cmds)
		}
		_ = next(ctx, cmds)
		for _, cmd := range cmds {
			if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
				return cmd.Err()
			}
			cmd.SetErr(nil)
		}
		err := next(ctx, cmds)
		if err == nil {
			h.resent.Add(1)
		}
		return err
	}
}

// resendEnv is a store whose every script runs twice, a plain store on the
// same server to look at the outcome, and a client to read raw keys.
type resendEnv struct {
	resend *store.Redis
	plain  *store.Redis
	rdb    *redis.Client
	hook   *resendHook
}

func newTestResendEnv(tb testing.TB, srv *redistest.Server) *resendEnv {
	tb.Helper()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	hook := &resendHook{}
	client.AddHook(hook)
	resend := store.NewRedis(client, testOpts)
	tb.Cleanup(func() { _ = resend.Close() })
	rdb := newServerClient(tb, srv)
	return &resendEnv{
		resend: resend,
		plain:  newTestRedis(tb, srv, &redis.Options{Addr: srv.Addr()}, testOpts),
		rdb:    rdb,
		hook:   hook,
	}
}

// lockValue returns who holds the turn lock of threadID as
// "<token>|<claimed elicitation ID>", "" when none is held.
func (e *resendEnv) lockValue(tb testing.TB, threadID string) string {
	tb.Helper()
	v, err := e.rdb.Get(context.Background(), "chatd:{"+threadID+"}:lock").Result()
	if err == redis.Nil {
		return ""
	}
	require.NoError(tb, err)
	token, rest, _ := strings.Cut(v, "|")
	claim, _, _ := strings.Cut(rest, "|")
	return token + "|" + claim
}

func (e *resendEnv) threadField(tb testing.TB, threadID, field string) string {
	tb.Helper()
	v, err := e.rdb.HGet(context.Background(), "chatd:{"+threadID+"}:thread", field).Result()
	require.NoError(tb, err)
	return v
}

func (e *resendEnv) elicitationState(tb testing.TB, threadID, id string) string {
	tb.Helper()
	v, err := e.rdb.HGet(context.Background(), "chatd:{"+threadID+"}:elicitations", id).Result()
	require.NoError(tb, err)
	return v
}

// TestRedisResentScripts runs every store operation with each script sent
// twice with identical arguments, and checks that the second run answers as
// the first did and leaves the state one run leaves.
func TestRedisResentScripts(t *testing.T) {
	srv := redistest.Start(t)
	tests := []struct {
		name string
		fn   func(t *testing.T, e *resendEnv)
	}{
		{"CreateThread", testResendCreate},
		{"Turn", testResendTurn},
		{"PauseAndResume", testResendPauseResume},
		{"Release", testResendRelease},
		{"StillRefused", testResendStillRefused},
		{"DeleteThread", testResendDelete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newTestResendEnv(t, srv)
			tt.fn(t, e)
			assert.Positive(t, e.hook.resent.Load(), "scripts were sent twice")
		})
	}
}

func testResendCreate(t *testing.T, e *resendEnv) {
	ctx := context.Background()
	created := time.Date(2025, 6, 18, 12, 0, 0, 123456789, time.UTC)
	want := store.Thread{ID: blocks.NewID(), Owner: alice, Processor: "demo", CreatedAt: created, UpdatedAt: created}
	require.NoError(t, e.resend.CreateThread(ctx, want))
	got, _, err := e.plain.GetThread(ctx, want.ID, alice)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Another call creating a thread under the same ID is still refused,
	// resent or not, even when it creates the very same thread.
	for _, other := range []store.Thread{
		want,
		{ID: want.ID, Owner: bob, Processor: "demo", CreatedAt: created},
		{ID: want.ID, Owner: alice, Processor: "echo", CreatedAt: created},
		{ID: want.ID, Owner: alice, Processor: "demo", CreatedAt: created.Add(time.Nanosecond)},
	} {
		assert.Error(t, e.resend.CreateThread(ctx, other), "%+v", other)
	}
	got, _, err = e.plain.GetThread(ctx, want.ID, alice)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func testResendTurn(t *testing.T, e *resendEnv) {
	ctx := context.Background()
	th := mustCreateThread(t, e.plain)
	earlier := mustAppend(t, e.plain, th.ID, 3)
	th, _, err := e.plain.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)

	begin, err := e.resend.BeginTurn(ctx, store.BeginTurn{
		ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL, Window: 2,
	})
	require.NoError(t, err, "a resent begin finds its own lock, not a busy thread")
	require.NotEmpty(t, begin.LockToken)
	assert.Nil(t, begin.Replay)
	assert.Equal(t, th, begin.Thread)
	assert.Equal(t, messageIDs(earlier[1:]), messageIDs(mustDecode(t, begin.History)))
	assert.Equal(t, begin.LockToken+"|", e.lockValue(t, th.ID))

	msgs := newTestMessages(2, "turn")
	require.NoError(t, e.resend.CommitTurn(ctx, store.Commit{
		ThreadID: th.ID, LockToken: begin.LockToken, Messages: msgs,
		Idempotency: &store.Idempotency{Principal: alice, Key: "k", Fingerprint: "f", Result: []byte(`{"ok":true}`)},
	}), "a resent commit finds its own commit, not a lost lock")

	assert.Equal(t, append(messageIDs(earlier), messageIDs(msgs)...), messageIDs(mustHistoryAll(t, e.plain, th.ID)),
		"the turn is in history exactly once")
	assert.Equal(t, "5", e.threadField(t, th.ID, "seq"), "history positions were taken once")
	assert.Empty(t, e.lockValue(t, th.ID), "the lock is released")

	replay, err := e.plain.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, IdempotencyKey: "k", LockTTL: lockTTL})
	require.NoError(t, err)
	require.NotNil(t, replay.Replay)
	assert.Equal(t, []byte(`{"ok":true}`), replay.Replay.Result)
	next := mustBegin(t, e.plain, th.ID, 0)
	assert.NotEmpty(t, next.LockToken, "the thread takes the next turn at once")
}

func testResendPauseResume(t *testing.T, e *resendEnv) {
	ctx := context.Background()
	th := mustCreateThread(t, e.plain)

	ask, err := e.resend.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
	require.NoError(t, err)
	pause := newTestPending(time.Hour)
	question := newTestMessages(2, "ask")
	require.NoError(t, e.resend.CommitTurn(ctx, store.Commit{
		ThreadID: th.ID, LockToken: ask.LockToken, Messages: question, Pause: &pause,
	}))
	_, pending, err := e.plain.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assertSamePending(t, pause, pending)
	assert.Equal(t, "issued", e.elicitationState(t, th.ID, pause.ElicitationID))

	resume, err := e.resend.BeginResume(ctx, store.BeginResume{
		ThreadID: th.ID, Principal: alice, ElicitationID: pause.ElicitationID, LockTTL: lockTTL, Window: 10,
	})
	require.NoError(t, err, "a resent resume finds its own claim, not a consumed elicitation")
	require.NotEmpty(t, resume.LockToken)
	assertSamePending(t, pause, resume.Pending)
	assert.Equal(t, messageIDs(question), messageIDs(mustDecode(t, resume.History)))
	assert.Equal(t, resume.LockToken+"|"+pause.ElicitationID, e.lockValue(t, th.ID))

	answer := newTestMessages(2, "answer")
	require.NoError(t, e.resend.CommitTurn(ctx, store.Commit{
		ThreadID: th.ID, LockToken: resume.LockToken, Messages: answer, Consumed: pause.ElicitationID,
	}))
	assert.Equal(t, append(messageIDs(question), messageIDs(answer)...), messageIDs(mustHistoryAll(t, e.plain, th.ID)))
	_, pending, err = e.plain.GetThread(ctx, th.ID, alice)
	require.NoError(t, err)
	assert.Nil(t, pending)
	assert.Equal(t, "consumed", e.elicitationState(t, th.ID, pause.ElicitationID))
	assert.Empty(t, e.lockValue(t, th.ID))
	_, err = e.plain.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: pause.ElicitationID, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrElicitationConsumed)
}

func testResendRelease(t *testing.T, e *resendEnv) {
	ctx := context.Background()
	th := mustCreateThread(t, e.plain)
	pause := mustPause(t, e.plain, th.ID, time.Hour)

	resume, err := e.resend.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: pause.ElicitationID, LockTTL: lockTTL})
	require.NoError(t, err)
	// The package documents this: a resent release finds no lock and says
	// so, and callers ignore a release's error; the state is one release's.
	assert.ErrorIs(t, e.resend.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: resume.LockToken}), store.ErrLockLost)
	assert.Empty(t, e.lockValue(t, th.ID))
	again, err := e.plain.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: pause.ElicitationID, LockTTL: lockTTL})
	require.NoError(t, err, "the released claim leaves the elicitation pending")
	require.NoError(t, e.plain.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: again.LockToken}))
}

// testResendStillRefused checks that recognising a script's own earlier run
// lets nobody else's lock, claim or commit through.
func testResendStillRefused(t *testing.T, e *resendEnv) {
	ctx := context.Background()
	th := mustCreateThread(t, e.plain)
	pause := mustPause(t, e.plain, th.ID, time.Hour)

	claim, err := e.plain.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: pause.ElicitationID, LockTTL: lockTTL})
	require.NoError(t, err)
	_, err = e.resend.BeginResume(ctx, store.BeginResume{ThreadID: th.ID, Principal: alice, ElicitationID: pause.ElicitationID, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrBusy, "another answer's live claim")
	_, err = e.resend.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
	assert.ErrorIs(t, err, store.ErrBusy, "another turn's lock")
	require.NoError(t, e.plain.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: claim.LockToken}))

	// A turn whose lock went (as at expiry) is refused, resent or not, both
	// before and after another turn committed: last_commit is not its token.
	th = mustCreateThread(t, e.plain)
	earlier := mustAppend(t, e.plain, th.ID, 2)
	stale, err := e.resend.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
	require.NoError(t, err)
	require.NoError(t, e.rdb.Del(ctx, "chatd:{"+th.ID+"}:lock").Err())
	staleCommit := store.Commit{ThreadID: th.ID, LockToken: stale.LockToken, Messages: newTestMessages(1, "stale")}
	assert.ErrorIs(t, e.resend.CommitTurn(ctx, staleCommit), store.ErrLockLost, "no commit since the lock went")
	other := newTestMessages(1, "other")
	mustTurn(t, e.plain, th.ID, other)
	assert.ErrorIs(t, e.resend.CommitTurn(ctx, staleCommit), store.ErrLockLost, "another turn committed since")
	assert.Equal(t, append(messageIDs(earlier), messageIDs(other)...), messageIDs(mustHistoryAll(t, e.plain, th.ID)),
		"nothing of the stale turn was written")

	// A second CommitTurn call with a token that committed is another call:
	// its messages would be dropped, so it must not be told OK.
	turn, err := e.resend.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
	require.NoError(t, err)
	once := newTestMessages(1, "once")
	require.NoError(t, e.resend.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: turn.LockToken, Messages: once}))
	assert.ErrorIs(t, e.resend.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: turn.LockToken, Messages: newTestMessages(1, "twice")}),
		store.ErrLockLost)
	assert.Equal(t, append(append(messageIDs(earlier), messageIDs(other)...), messageIDs(once)...),
		messageIDs(mustHistoryAll(t, e.plain, th.ID)))
}

func testResendDelete(t *testing.T, e *resendEnv) {
	ctx := context.Background()
	th := mustCreateThread(t, e.plain)
	mustAppend(t, e.plain, th.ID, 2)
	// The package documents this: a resent delete finds no thread and says
	// so; the state is one delete's.
	assert.ErrorIs(t, e.resend.DeleteThread(ctx, th.ID, alice), store.ErrNotFound)
	keys, err := e.rdb.Keys(ctx, "chatd:{"+th.ID+"}:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys)
}

// TestRedisRefusedClient checks that a Redis refusing the client by
// configuration — no password, a wrong one, an ACL without the commands the
// store runs — is ErrUnavailable with the cause kept, so the API answers 503
// and readiness fails, and not an internal error.
func TestRedisRefusedClient(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	th := mustCreateThread(t, newTestRedis(t, srv, &redis.Options{Addr: srv.Addr()}, testOpts))

	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "limited", "on", ">limited-pw", "~*", "-@all").Err())
	// The admin connection stays authenticated; every new one must log in.
	require.NoError(t, admin.ConfigSet(ctx, "requirepass", "secret").Err())

	tests := []struct {
		name       string
		opts       redis.Options
		wantRefuse bool
	}{
		{"no password", redis.Options{}, true},
		{"wrong password", redis.Options{Password: "wrong"}, true},
		{"no permission", redis.Options{Username: "limited", Password: "limited-pw"}, true},
		{"right password", redis.Options{Password: "secret"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Addr = srv.Addr()
			st := newTestRedis(t, srv, &o, testOpts)
			ops := []struct {
				name string
				op   func() error
			}{
				{"Ping", func() error { return st.Ping(ctx) }},
				{"BeginTurn", func() error {
					ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th.ID, Principal: alice, LockTTL: lockTTL})
					if err == nil {
						return st.Release(ctx, store.ReleaseTurn{ThreadID: th.ID, LockToken: ts.LockToken})
					}
					return err
				}},
			}
			for _, op := range ops {
				err := op.op()
				if !tt.wantRefuse {
					assert.NoError(t, err, op.name)
					continue
				}
				assert.ErrorIs(t, err, store.ErrUnavailable, op.name)
				assert.True(t, hasCause(err), "%s: the cause stays in the chain for the logs: %v", op.name, err)
			}
		})
	}
}
