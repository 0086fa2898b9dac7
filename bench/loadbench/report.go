package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// report renders the table and the lines around it as markdown.
func (b *bench) report(rows []row, took time.Duration) string {
	var s strings.Builder
	s.WriteString("## chatd load benchmark\n\n")
	fmt.Fprintf(&s, "- machine: %d CPUs (GOMAXPROCS %d), %s, %s %s/%s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&s, "- redis-server %s on 127.0.0.1, no persistence; clients, servers and Redis share the machine\n", b.redisVersion())
	fmt.Fprintf(&s, "- %d requests per row (at most %s each) after %d warm-up requests, %d concurrent keep-alive clients; run took %s\n",
		b.cfg.requests, b.cfg.rowLimit, b.cfg.warmup, b.cfg.concurrency, took.Round(100*time.Millisecond))
	fmt.Fprintf(&s, "- chatd: auth mode none; echo %s in rows 1, 2, 4 and 6, reading a window of %d in row 5\n\n",
		b.historyText(), growthWindow)
	s.WriteString("| # | scenario | requests | concurrency | throughput (req/s) | p50 | p99 | ratio | ratio is |\n")
	s.WriteString("|---|---|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&s, "| %s | %s | %d | %d | %.0f | %s | %s | %.2f | %s |\n",
			r.id, r.scenario, r.res.done, b.cfg.concurrency, r.res.throughput(),
			ms(r.p50()), ms(r.p99()), r.ratio, r.ratioIs)
	}
	s.WriteString("\n")
	if b.memoryLine != "" {
		s.WriteString(b.memoryLine + "\n")
	}
	for _, r := range rows {
		if r.res.errors > 0 {
			fmt.Fprintf(&s, "\nrow %s: %d failed requests; first: %v\n", r.id, r.res.errors, r.res.firstErr)
		}
	}
	return s.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// cpuModel is the first "model name" of /proc/cpuinfo, or "unknown CPU".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "unknown CPU"
}

func (b *bench) redisVersion() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := b.rdb.Info(ctx, "server").Result()
	if err != nil {
		return "(version unknown)"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "(version unknown)"
}
