package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"chatd/internal/blocks"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

// BenchmarkBranchedHistory reads a page of 10 of the head's branch on two
// Redis threads with a branch every 10 messages, one of 10 messages and
// one of 10,000, in the same run, and reports growth (the long thread's
// page time ÷ the short one's; goal ≤ 1.2) and mem×json (MEMORY USAGE of
// the long thread's lasting keys — record, history, tree — ÷ the JSON of
// its messages; goal ≤ 1.3).
func BenchmarkBranchedHistory(b *testing.B) {
	srv := redistest.Start(b)
	rdb := newServerClient(b, srv)
	opts := testOpts
	opts.HistoryMax = 20_000
	st := newTestRedis(b, srv, &redis.Options{Addr: srv.Addr()}, opts)
	short, _ := mustBranchedThread(b, st, 10)
	long, jsonBytes := mustBranchedThread(b, st, 10_000)
	ctx := context.Background()
	page := func(threadID string) time.Duration {
		start := time.Now()
		p, err := st.History(ctx, threadID, alice, 10, "")
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Messages) != 10 {
			b.Fatalf("page of %d messages, want 10", len(p.Messages))
		}
		return time.Since(start)
	}
	var shortTime, longTime time.Duration
	for b.Loop() {
		// Interleaved, so both see the same machine.
		shortTime += page(short)
		longTime += page(long)
	}
	b.ReportMetric(float64(longTime)/float64(shortTime), "growth")
	var used int64
	for _, k := range []string{"thread", "history", "tree"} {
		n, err := rdb.MemoryUsage(ctx, "chatd:{"+long+"}:"+k, 0).Result()
		if err != nil {
			b.Fatalf("MEMORY USAGE %s: %v", k, err)
		}
		used += n
	}
	b.ReportMetric(float64(used)/float64(jsonBytes), "mem×json")
}

// mustBranchedThread creates a thread of n messages as turns make them,
// where every fifth turn's reply is regenerated (a branch every 10
// messages, the regenerated reply the head; a turn of the last ten is
// regenerated too), and returns its ID and the
// bytes of its messages' JSON as stored.
func mustBranchedThread(tb testing.TB, st contractStore, n int) (string, int) {
	tb.Helper()
	ctx := context.Background()
	th := mustCreateThread(tb, st)
	size, turns := 0, 0
	commit := func(parent string, msgs ...blocks.Message) {
		ts := mustBegin(tb, st, th.ID, 0)
		if err := st.CommitTurn(ctx, store.Commit{ThreadID: th.ID, LockToken: ts.LockToken, Messages: msgs, Parent: &parent}); err != nil {
			tb.Fatal(err)
		}
		for i := range msgs {
			msgs[i].ParentID = parent
			parent = msgs[i].ID
			b, err := msgs[i].MarshalJSON()
			if err != nil {
				tb.Fatal(err)
			}
			size += len(b)
		}
	}
	head := ""
	for count := 0; count < n; {
		msgs := newTestMessages(2, "turn")
		commit(head, msgs...)
		head, count, turns = msgs[1].ID, count+2, turns+1
		if turns%5 == 0 {
			reply := newTestMessages(2, "again")[1]
			commit(msgs[0].ID, reply)
			head, count = reply.ID, count+1
		}
	}
	return th.ID, size
}
