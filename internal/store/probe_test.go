package store_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"chatd/internal/blocks"
	"chatd/internal/redistest"
	"chatd/internal/store"
)

func BenchmarkProbeJSONTurn(b *testing.B) {
	for _, logged := range []bool{false, true} {
		b.Run(fmt.Sprint(logged), func(b *testing.B) { probe(b, logged, false) })
	}
	b.Run("begin-release", func(b *testing.B) { probe(b, false, true) })
}

func probe(b *testing.B, logged, release bool) {
	addr := os.Getenv("PROBE_REDIS")
	if addr == "" {
		addr = redistest.Start(b).Addr()
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	opts := testOpts
	opts.TurnEventsTTL = 10 * time.Minute
	st := store.NewRedis(redis.NewClient(&redis.Options{Addr: addr}), opts)
	ctx := context.Background()
	threads := make([]string, 16)
	for i := range threads {
		threads[i] = mustCreateThread(b, st).ID
	}
	start := strings.Repeat("s", 150)
	final := strings.Repeat("f", 1100)
	rdb.ConfigResetStat(ctx)
	if os.Getenv("PROBE_REDIS") != "" {
		// warm up: load scripts
		ts, _ := st.BeginTurn(ctx, store.BeginTurn{ThreadID: threads[0], Principal: alice, LockTTL: lockTTL})
		_ = st.Release(ctx, store.ReleaseTurn{ThreadID: threads[0], LockToken: ts.LockToken})
		exec.Command("callgrind_control", "-z").Run()
	}
	i := 0
	for b.Loop() {
		th := threads[i%len(threads)]
		i++
		tid := blocks.NewID()
		if !logged {
			tid = ""
		}
		ts, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: th, Principal: alice, LockTTL: lockTTL,
			Turn: store.TurnBegin{ID: tid, Fingerprint: "fp", Start: store.TurnEvent{ID: 1, Name: "message.start", Data: []byte(start)}}})
		if err != nil {
			b.Fatal(err)
		}
		if release {
			if err := st.Release(ctx, store.ReleaseTurn{ThreadID: th, LockToken: ts.LockToken}); err != nil {
				b.Fatal(err)
			}
			continue
		}
		err = st.CommitTurn(ctx, store.Commit{ThreadID: th, LockToken: ts.LockToken, Messages: newTestMessages(2, "bench"),
			Owner: alice, TurnID: tid, Events: []store.TurnEvent{{ID: 2, Name: "turn.completed", Data: []byte(final)}}, Preview: "p"})
		if err != nil {
			b.Fatal(err)
		}
	}
	if os.Getenv("PROBE_REDIS") != "" {
		out, _ := exec.Command("callgrind_control", "-d").CombinedOutput()
		fmt.Println(string(out), b.N)
	}
	info, _ := rdb.Info(ctx, "commandstats").Result()
	if b.N > 1000 {
		for line := range strings.Lines(info) {
			if strings.HasPrefix(line, "cmdstat") {
				var name string
				var calls, usec int64
				line = strings.TrimPrefix(line, "cmdstat_")
				name = line[:strings.Index(line, ":")]
				fmt.Sscanf(line[strings.Index(line, "calls="):], "calls=%d,usec=%d", &calls, &usec)
				fmt.Printf("%-20s calls/turn=%.2f usec/turn=%.2f\n", name, float64(calls)/float64(b.N), float64(usec)/float64(b.N))
			}
		}
	}
}

func BenchmarkProbeNotFound(b *testing.B) {
	addr := os.Getenv("PROBE_REDIS")
	st := store.NewRedis(redis.NewClient(&redis.Options{Addr: addr}), testOpts)
	ctx := context.Background()
	missing := blocks.NewID()
	_, _ = st.BeginTurn(ctx, store.BeginTurn{ThreadID: missing, Principal: alice, LockTTL: lockTTL})
	exec.Command("callgrind_control", "-z").Run()
	for b.Loop() {
		_, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: missing, Principal: alice, LockTTL: lockTTL})
		if err == nil {
			b.Fatal("found")
		}
	}
	exec.Command("callgrind_control", "-d").Run()
}
