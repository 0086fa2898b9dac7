// Command loadbench is chatd's load benchmark. It starts real chatd servers
// (and a floor server, a minimal handler doing a turn's Redis writes) on
// 127.0.0.1, with a redis-server of its own, drives them with concurrent
// keep-alive HTTP clients, and prints one markdown table: requests,
// concurrency, throughput, p50, p99 and the ratio of each row to its
// baseline measured in the same run. Every run is bounded in requests and
// time; see docs/performance.md for what each row means.
//
// Usage:
//
//	go run ./bench/loadbench [-requests 3000] [-concurrency 16] [-cpuprofile redis-turn.pprof] [-streams-full]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// profileRows are the rows -cpuprofile can profile.
var profileRows = []string{"1", "2", "2r", "3", "4", "6", "6c", "6d", "8a", "8b"}

// config is the benchmark's command line.
type config struct {
	requests    int
	concurrency int
	warmup      int
	rowLimit    time.Duration
	total       time.Duration
	bigThread   int
	seedBatch   int
	cpuProfile  string
	profileFor  time.Duration
	profileRow  string
	readHistory bool
	rounds      int
	redisBin    string
	turnsOnly   bool
	streamsFull bool
	noStreams   bool
	streamsOnly bool
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	fs.IntVar(&cfg.requests, "requests", 3000, "requests per row (a round trip counts as two)")
	fs.IntVar(&cfg.concurrency, "concurrency", 16, "concurrent clients, each on its own thread")
	fs.IntVar(&cfg.rounds, "rounds", 4, "rounds the compared rows (1–3, 5a/5b, 5c/5d, 6b/6c/6d, 8a/8b) are interleaved in, every other one in reverse order (even: each row measured at every place alike)")
	fs.IntVar(&cfg.warmup, "warmup", 300, "unmeasured requests before each row")
	fs.DurationVar(&cfg.rowLimit, "duration", 10*time.Second, "time bound of each measured row")
	fs.DurationVar(&cfg.total, "timeout", 6*time.Minute+30*time.Second, "time bound of the whole run")
	fs.IntVar(&cfg.bigThread, "big-thread", 10000, "messages in the long thread of row 5")
	fs.IntVar(&cfg.seedBatch, "seed-batch", 500, "messages per store commit when seeding long threads")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "after the row of -profile-row, run its load again under the CPU profiler and write the profile to this file")
	fs.DurationVar(&cfg.profileFor, "profile-duration", 10*time.Second, "how long the profiled run of -cpuprofile lasts")
	fs.StringVar(&cfg.profileRow, "profile-row", "2", "the row -cpuprofile profiles: 1, 2, 2r, 3, 4, 6, 6c, 6d, 8a or 8b")
	fs.BoolVar(&cfg.readHistory, "read-history", false, "rows 1, 2, 4 and 6 use an echo that reads its whole history window (chatd's default, 50), to show what a processor reading history costs")
	fs.BoolVar(&cfg.turnsOnly, "turns-only", false, "measure only the plain-turn rows (1, 2, 2r, 2p, 3)")
	fs.BoolVar(&cfg.streamsFull, "streams-full", false, "row 9a steps N through 1,000, 2,500, 5,000 and 10,000 long streams (default: 1,000 and 2,500)")
	fs.BoolVar(&cfg.streamsOnly, "streams-only", false, "measure only rows 9a–9d")
	fs.BoolVar(&cfg.noStreams, "no-streams", false, "skip rows 9a–9d (long streamed agent turns)")
	fs.StringVar(&cfg.redisBin, "redis-server", "", "redis-server binary (default: from PATH, installed with apt-get when missing and root)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.requests < 2 || cfg.concurrency < 1 || cfg.rounds < 1 || cfg.rounds > cfg.requests/2 || cfg.warmup < 0 || cfg.rowLimit <= 0 || cfg.total <= 0 ||
		cfg.bigThread < 10 || cfg.seedBatch < 1 || cfg.profileFor <= 0 ||
		!slices.Contains(profileRows, cfg.profileRow) {
		return cfg, fmt.Errorf("flags out of range: requests ≥ 2, concurrency ≥ 1, 1 ≤ rounds ≤ requests/2, warmup ≥ 0, durations > 0, big-thread ≥ 10, seed-batch ≥ 1, profile-row one of %s", strings.Join(profileRows, ", "))
	}
	return cfg, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		stop()
		os.Exit(1)
	}
}

// run sets up the servers, measures every row and prints the table to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.total)
	defer cancel()
	b, err := newBench(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.close()

	start := time.Now()
	rows, err := b.measure(ctx)
	if err != nil {
		return err
	}
	report := b.report(rows, time.Since(start))
	if _, err := io.WriteString(out, report); err != nil {
		return err
	}
	for _, r := range rows {
		if r.res.errors > 0 {
			return fmt.Errorf("row %s had %d failed requests; first: %v", r.id, r.res.errors, r.res.firstErr)
		}
	}
	return nil
}
