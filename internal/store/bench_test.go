package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"chatd/internal/blocks"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// benchSizes are the thread lengths each benchmark runs on: a page or a turn
// should cost the same on both.
var benchSizes = []int{10, 10_000}

// benchStores runs fn as sub-benchmarks Memory/<n>msgs and Redis/<n>msgs, on
// a thread already holding n messages and capped at n, so commits trim and
// the thread keeps its length. Redis runs also report server-µs/op, the time
// redis-server itself spent in the scripts, which a busy client machine does
// not blur.
func benchStores(b *testing.B, fn func(b *testing.B, st contractStore, threadID string, msgs []blocks.Message)) {
	impls := []struct {
		name string
		// newStore returns the store and, for Redis, a function that returns
		// the script time spent since the previous call.
		newStore func(b *testing.B, opts store.Options) (contractStore, func() time.Duration)
	}{
		{"Memory", func(b *testing.B, opts store.Options) (contractStore, func() time.Duration) {
			return newTestMemory(b, opts), nil
		}},
		{"Redis", func(b *testing.B, opts store.Options) (contractStore, func() time.Duration) {
			srv := redistest.Start(b)
			rdb := newServerClient(b, srv)
			return newTestRedis(b, srv, &redis.Options{Addr: srv.Addr()}, opts), func() time.Duration {
				return mustScriptTime(b, rdb)
			}
		}},
	}
	for _, impl := range impls {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dmsgs", impl.name, n), func(b *testing.B) {
				opts := testOpts
				opts.HistoryMax = n
				st, scriptTime := impl.newStore(b, opts)
				th := mustCreateThread(b, st)
				msgs := mustAppend(b, st, th.ID, n)
				if scriptTime != nil {
					scriptTime()
				}
				b.ReportAllocs()
				fn(b, st, th.ID, msgs)
				if scriptTime != nil {
					b.ReportMetric(float64(scriptTime().Microseconds())/float64(b.N), "server-µs/op")
				}
			})
		}
	}
}

// mustScriptTime returns the time redis-server spent running scripts since
// the previous call, and resets its statistics.
func mustScriptTime(tb testing.TB, rdb *redis.Client) time.Duration {
	tb.Helper()
	ctx := context.Background()
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		tb.Fatal(err)
	}
	var total time.Duration
	for line := range strings.Lines(info) {
		if !strings.HasPrefix(line, "cmdstat_eval") {
			continue
		}
		for field := range strings.SplitSeq(strings.TrimSpace(line[strings.Index(line, ":")+1:]), ",") {
			if usec, ok := strings.CutPrefix(field, "usec="); ok {
				n, err := strconv.ParseInt(usec, 10, 64)
				if err != nil {
					tb.Fatalf("commandstats line %q: %v", line, err)
				}
				total += time.Duration(n) * time.Microsecond
			}
		}
	}
	return total
}

// BenchmarkCommitTurn measures a plain turn's store work: BeginTurn with a
// 10-message window (all a 10-message thread has, so both sizes read the
// same), then CommitTurn of two messages (which trims two).
func BenchmarkCommitTurn(b *testing.B) {
	benchStores(b, func(b *testing.B, st contractStore, threadID string, _ []blocks.Message) {
		ctx := context.Background()
		for b.Loop() {
			ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: threadID, Principal: alice, LockTTL: lockTTL, Window: 10})
			if err != nil {
				b.Fatal(err)
			}
			err = st.CommitTurn(ctx, store.Commit{ThreadID: threadID, LockToken: ts.LockToken, Messages: newTestMessages(2, "bench")})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJSONTurn measures the store work of a turn answered as JSON, as
// the turn engine does it: a begin that reads no history window and keeps
// the turn's first event, and a commit of two messages with the turn's last
// event, the owner's index and the thread's preview. logged=false leaves
// the turn log out, to show what it costs.
func BenchmarkJSONTurn(b *testing.B) {
	start := []byte(`{"thread_id":"` + blocks.NewID() + `","turn_id":"` + blocks.NewID() + `","message_id":"` + blocks.NewID() + `","user_message_id":"` + blocks.NewID() + `"}`)
	final := []byte(`{"status":"completed","message":` + strings.Repeat(`"x"`, 300) + `}`)
	for _, logged := range []bool{true, false} {
		b.Run(fmt.Sprintf("logged=%t", logged), func(b *testing.B) {
			benchStores(b, func(b *testing.B, st contractStore, threadID string, _ []blocks.Message) {
				ctx := context.Background()
				for b.Loop() {
					var begin store.TurnBegin
					var events []store.TurnEvent
					if logged {
						begin = store.TurnBegin{ID: blocks.NewID(), Start: store.TurnEvent{ID: 1, Name: "message.start", Data: start}}
						events = []store.TurnEvent{{ID: 2, Name: "turn.completed", Data: final, Last: true}}
					}
					ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: threadID, Principal: alice, LockTTL: lockTTL, Turn: begin})
					if err != nil {
						b.Fatal(err)
					}
					// The engine names the parent: the branch's last message.
					err = st.CommitTurn(ctx, store.Commit{ThreadID: threadID, Owner: alice, LockToken: ts.LockToken, Parent: &ts.Leaf,
						Messages: newTestMessages(2, "bench"), TurnID: begin.ID, Start: begin.Start, Events: events, Preview: "bench"})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkHistoryPage measures reading a 5-message page before a cursor in
// the middle of the thread.
func BenchmarkHistoryPage(b *testing.B) {
	benchStores(b, func(b *testing.B, st contractStore, threadID string, msgs []blocks.Message) {
		ctx := context.Background()
		before := msgs[len(msgs)/2].ID
		for b.Loop() {
			page, err := st.History(ctx, threadID, alice, 5, before)
			if err != nil {
				b.Fatal(err)
			}
			if len(page.Messages) != 5 {
				b.Fatalf("page has %d messages, want 5", len(page.Messages))
			}
		}
	})
}
