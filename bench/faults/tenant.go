package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"chatd/internal/redistest"
)

// turnLogsBound fills the embedded store with big echo turns on one thread:
// its history is trimmed (CHATD_HISTORY_MAX_BYTES) far below the bound, so
// what fills the store is what every turn's event log keeps for
// CHATD_TURN_EVENTS_TTL, its result. New work must get 507 while reads
// still work, and the process stay within a few times the bound (RSS
// also holds what the runtime has freed but not yet returned).
func turnLogsBound(ctx context.Context, cfg config, bin string) ([]row, error) {
	const limit, size, most = 20_000_000, 900 << 10, 150
	in, err := startChatd(ctx, bin, "CHATD_MEMORY_MAX_BYTES="+strconv.Itoa(limit), "CHATD_HISTORY_MAX_BYTES=4000000",
		"CHATD_RATE_LIMIT=0")
	if err != nil {
		return nil, err
	}
	defer in.stop()
	var th struct{ ID string }
	if code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", "logs", "", &th); err != nil || code != http.StatusCreated {
		return nil, fmt.Errorf("create thread: %d %v", code, err)
	}
	body := `{"message":"` + strings.Repeat("l", size) + `"}`
	turns, full := 0, false
	for turns < most && !full {
		code, err := call(ctx, http.MethodPost, in.base+"/v1/threads/"+th.ID+"/turns", "logs", body, nil)
		if err != nil {
			return nil, err
		}
		switch code {
		case http.StatusOK:
			turns++
		case http.StatusInsufficientStorage:
			full = true
		default:
			return nil, fmt.Errorf("turn %d: %d", turns, code)
		}
	}
	created, err := call(ctx, http.MethodPost, in.base+"/v1/threads", "other", "", nil)
	if err != nil {
		return nil, err
	}
	read, err := call(ctx, http.MethodGet, in.base+"/v1/threads/"+th.ID+"/messages?limit=2", "logs", "", nil)
	if err != nil {
		return nil, err
	}
	rss, err := residentBytes(in.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	heap, err := heapInUse(in.base)
	if err != nil {
		return nil, err
	}
	outcome := "no 507"
	if full {
		outcome = "507"
	}
	ok := full && created == http.StatusInsufficientStorage && read == http.StatusOK && heap < 4*limit && rss < 8*limit
	return []row{{fmt.Sprintf("embedded store (%d MB) at its bound with turn logs: echo turns of 900 KB on one thread", limit/1_000_000),
		fmt.Sprintf("%s after %d turns (%.0f MB sent); another principal's create %d, a read %d; heap in use %.0f MB, RSS %.0f MB",
			outcome, turns, float64(turns)*size/(1<<20), created, read, heap/(1<<20), float64(rss)/(1<<20)),
		"507 for new work, reads 200; heap < 4×, RSS < 8× the bound", status(ok)}}, nil
}

// residentBytes is a process's resident set size.
func residentBytes(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// heapInUse reads go_memstats_heap_inuse_bytes from an instance's metrics.
func heapInUse(base string) (float64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	metrics, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(metrics), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, errors.New("no go_memstats_heap_inuse_bytes in /metrics")
}

// quotaRefusals measures what a create refused at CHATD_MAX_THREADS costs
// Redis: commands run (those scripts call included) per refusal, for a
// principal at a quota of 100 and one at a quota twenty times larger, on
// instances sharing one Redis. Every thread is made to look last updated
// two minutes ago, so a refusal may check any of them.
func quotaRefusals(ctx context.Context, cfg config, bin string) ([]row, error) {
	const small, large, refusals = 100, 2000, 20
	rds, err := redistest.Launch(ctx, redistest.Options{})
	if err != nil {
		return nil, err
	}
	defer rds.Stop()
	perRefusal := map[int]float64{}
	for _, quota := range []int{small, large} {
		in, err := startChatd(ctx, bin, "CHATD_REDIS_URL=redis://"+rds.Addr()+"/0", "CHATD_MAX_THREADS="+strconv.Itoa(quota),
			"CHATD_RATE_LIMIT=0")
		if err != nil {
			return nil, err
		}
		principal := "quota-" + strconv.Itoa(quota)
		for i := range quota {
			if code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", principal, "", nil); err != nil || code != http.StatusCreated {
				in.stop()
				return nil, fmt.Errorf("create thread %d of %d: %d %v", i, quota, code, err)
			}
		}
		if err := ageThreadIndexes(ctx, rds, 2*time.Minute); err != nil {
			in.stop()
			return nil, err
		}
		refuse := func() error {
			code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", principal, "", nil)
			if err == nil && code != http.StatusForbidden {
				err = fmt.Errorf("create beyond the quota: %d, want 403", code)
			}
			return err
		}
		err = refuse() // loads the scripts
		before, werr := redistest.ReadWork(ctx, rds.Addr())
		for i := 0; i < refusals && err == nil && werr == nil; i++ {
			err = refuse()
		}
		after, aerr := redistest.ReadWork(ctx, rds.Addr())
		in.stop()
		if err = errors.Join(err, werr, aerr); err != nil {
			return nil, err
		}
		perRefusal[quota] = float64(after.Sub(before).Commands) / refusals
	}
	ratio := perRefusal[large] / perRefusal[small]
	return []row{{fmt.Sprintf("creates refused at the quota (%d refusals each, threads last updated 2 min ago)", refusals),
		fmt.Sprintf("Redis commands per refusal: %.0f at %d threads, %.0f at %d threads (%.2f×)", perRefusal[small], small, perRefusal[large], large, ratio),
		"O(1): the same at 20× the threads (≤ 1.5×)", status(ratio <= 1.5)}}, nil
}

// ageThreadIndexes makes every thread listed in a principal's index look
// last updated age ago, as threads nobody has touched for a while are.
func ageThreadIndexes(ctx context.Context, rds *redistest.Process, age time.Duration) error {
	keys, err := rds.Do(ctx, "KEYS", "chatd:{p:*}:threads")
	if err != nil {
		return err
	}
	score := strconv.FormatInt(time.Now().Add(-age).UnixMilli(), 10)
	for _, k := range keys.([]any) {
		members, err := rds.Do(ctx, "ZRANGE", k.(string), "0", "-1")
		if err != nil {
			return err
		}
		args := []string{"ZADD", k.(string), "XX"}
		for _, m := range members.([]any) {
			args = append(args, score, m.(string))
		}
		if len(args) > 3 {
			if _, err := rds.Do(ctx, args...); err != nil {
				return err
			}
		}
	}
	return nil
}
