// Command faults breaks chatd on purpose and prints what survived, as one
// markdown table for docs/reliability.md: Redis killed (kill -9) mid-load
// and restarted, one of two instances killed mid-load, connections that
// trickle headers or a body or never read, a principal flooding beside
// another, the embedded store filled up (with history, and with turn
// logs), creates refused at the thread quota, a principal holding many
// reattach streams beside another, and streams whose clients never read.
// Everything runs on 127.0.0.1:
// chatd as real processes (built once), a redis-server of its own with
// appendfsync always. Every phase is bounded in requests and time; the run
// takes about a minute.
//
// Usage:
//
//	go run ./bench/faults [-lease 3s] [-threads 48]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"chatd/internal/redistest"
)

type config struct {
	lease    time.Duration
	threads  int
	load     time.Duration
	outage   time.Duration
	flooders int
	samples  int
	// refusalDelay, when set, is the flood instance's CHATD_RATE_LIMIT_DELAY.
	refusalDelay string
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.lease, "lease", 3*time.Second, "CHATD_LOCK_LEASE of the instances under test")
	flag.IntVar(&cfg.threads, "threads", 48, "threads (and concurrent clients) of the load phases")
	flag.DurationVar(&cfg.load, "load", 3*time.Second, "load before and after each fault")
	flag.DurationVar(&cfg.outage, "outage", 2*time.Second, "how long Redis stays down")
	flag.IntVar(&cfg.flooders, "flooders", 16, "clients of the flooding principal, each sending without pause")
	flag.StringVar(&cfg.refusalDelay, "rate-limit-delay", "", "CHATD_RATE_LIMIT_DELAY of the flood phase's instance (default: chatd's); 0 answers refusals at once")
	flag.IntVar(&cfg.samples, "samples", 500, "turns of the normal principal timed idle, and again during the flood (p99 needs some hundreds; at most 599, the rate limit)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
}

// row is one line of the table.
type row struct{ fault, result, goal, status string }

func run(ctx context.Context, cfg config, out io.Writer) error {
	dir, err := os.MkdirTemp("", "chatd-faults-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "chatd")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/chatd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build chatd: %w", err)
	}
	start := time.Now()
	var rows []row
	for _, phase := range []func(context.Context, config, string) ([]row, error){redisKill, instanceKill, slowClients, flood, memoryBound,
		turnLogsBound, quotaRefusals, reattachFlood, stalledStreams} {
		r, err := phase(ctx, cfg, bin)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	fmt.Fprintf(out, "## chatd fault run\n\n- %d threads under load, CHATD_LOCK_LEASE=%s, Redis down %s with appendfsync always; run took %.0fs\n\n",
		cfg.threads, cfg.lease, cfg.outage, time.Since(start).Seconds())
	fmt.Fprintln(out, "| fault | result | goal | |")
	fmt.Fprintln(out, "|---|---|---|---|")
	failed := 0
	for _, r := range rows {
		fmt.Fprintf(out, "| %s | %s | %s | %s |\n", r.fault, r.result, r.goal, r.status)
		if r.status != "met" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d goals not met", failed)
	}
	return nil
}

func status(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

// instance is a chatd process.
type instance struct {
	cmd  *exec.Cmd
	base string
	logs bytes.Buffer
	done chan struct{}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startChatd runs bin with env on a free loopback port, ready once /readyz
// answers 200.
func startChatd(ctx context.Context, bin string, env ...string) (*instance, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	in := &instance{base: "http://" + addr, done: make(chan struct{})}
	in.cmd = exec.Command(bin)
	in.cmd.Env = append(os.Environ(), append([]string{"CHATD_ADDR=" + addr, "CHATD_PROCESSORS=echo", "CHATD_DEFAULT_PROCESSOR=echo",
		"CHATD_AUTH_MODE=header", "CHATD_LOG_LEVEL=error", "CHATD_UI=false"}, env...)...)
	in.cmd.Stdout, in.cmd.Stderr = &in.logs, &in.logs
	if err := in.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = in.cmd.Wait(); close(in.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(in.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in, nil
			}
		}
		select {
		case <-in.done:
			return nil, fmt.Errorf("chatd exited: %s", in.logs.String())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	in.kill()
	return nil, errors.New("chatd not ready within 30s")
}

func (in *instance) kill() {
	_ = in.cmd.Process.Signal(syscall.SIGKILL)
	<-in.done
}

func (in *instance) stop() {
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(20 * time.Second):
		in.kill()
	}
}

var client = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

// call sends a request as principal and decodes a JSON answer into out.
func call(ctx context.Context, method, url, principal, body string, out any) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Chatd-Principal", principal)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && resp.StatusCode < 300 {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

// load drives turns on threads (one client per thread) against the
// instances in turn, recording every acknowledged turn's text.
type load struct {
	principal string
	threads   []string
	acked     []map[string]bool
	mu        sync.Mutex
	statuses  map[int]int
	netErrs   atomic.Int64
}

func newLoad(ctx context.Context, base, principal string, n int) (*load, error) {
	l := &load{principal: principal, statuses: map[int]int{}}
	for range n {
		var th struct{ ID string }
		if code, err := call(ctx, http.MethodPost, base+"/v1/threads", principal, "", &th); err != nil || code != http.StatusCreated {
			return nil, fmt.Errorf("create thread: %d %v", code, err)
		}
		l.threads = append(l.threads, th.ID)
		l.acked = append(l.acked, map[string]bool{})
	}
	return l, nil
}

// run turns until stop closes; each client uses bases[i%len(bases)] and
// moves to the next base when its instance does not answer.
func (l *load) run(ctx context.Context, bases func(i int) string, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i, id := range l.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				text := fmt.Sprintf("t%d-%d", i, n)
				code, err := call(ctx, http.MethodPost, bases(i)+"/v1/threads/"+id+"/turns", l.principal, `{"message":"`+text+`"}`, nil)
				l.mu.Lock()
				if err != nil {
					l.netErrs.Add(1)
				} else {
					l.statuses[code]++
					if code == http.StatusOK {
						l.acked[i][text] = true
					}
				}
				l.mu.Unlock()
				if err != nil || code != http.StatusOK {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
}

// lost counts acknowledged turns missing from their thread's history.
func (l *load) lost(ctx context.Context, base string) (acked, lost int, err error) {
	for i, id := range l.threads {
		seen := map[string]bool{}
		before := ""
		for {
			var page struct {
				Messages []struct {
					Role    string
					Message string
				}
				NextBefore *string `json:"next_before"`
			}
			url := base + "/v1/threads/" + id + "/messages?limit=200"
			if before != "" {
				url += "&before=" + before
			}
			if code, err := call(ctx, http.MethodGet, url, l.principal, "", &page); err != nil || code != http.StatusOK {
				return 0, 0, fmt.Errorf("history: %d %v", code, err)
			}
			for _, m := range page.Messages {
				if m.Role == "user" {
					seen[m.Message] = true
				}
			}
			if page.NextBefore == nil {
				break
			}
			before = *page.NextBefore
		}
		for text := range l.acked[i] {
			acked++
			if !seen[text] {
				lost++
			}
		}
	}
	return acked, lost, nil
}

// untilUsable returns how long after since every thread accepted a turn.
func (l *load) untilUsable(ctx context.Context, base string, since time.Time, limit time.Duration) (time.Duration, error) {
	var mu sync.Mutex
	var latest time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, len(l.threads))
	for _, id := range l.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				code, err := call(ctx, http.MethodPost, base+"/v1/threads/"+id+"/turns", l.principal, `{"message":"probe"}`, nil)
				if err == nil && code == http.StatusOK {
					mu.Lock()
					latest = max(latest, time.Since(since))
					mu.Unlock()
					return
				}
				if time.Since(since) > limit {
					errs <- fmt.Errorf("thread %s still refuses turns (%d %v)", id, code, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return latest, <-errs
}

func (l *load) count(code int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statuses[code]
}

func (l *load) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	codes := make([]int, 0, len(l.statuses))
	for c := range l.statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", l.statuses[c], c))
	}
	return strings.Join(parts, ", ")
}

// twoInstances starts a Redis that writes every command to its log before
// answering (appendfsync always) and two chatd instances sharing it; stop
// ends them all, whatever the fault did to them.
func twoInstances(ctx context.Context, cfg config, bin string) (rds *redistest.Process, a, b *instance, stop func(), err error) {
	rds, err = redistest.Launch(ctx, redistest.Options{Args: []string{"--appendonly", "yes", "--appendfsync", "always"}})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	env := []string{"CHATD_REDIS_URL=redis://" + rds.Addr() + "/0", "CHATD_LOCK_LEASE=" + cfg.lease.String(), "CHATD_RATE_LIMIT=0"}
	if a, err = startChatd(ctx, bin, env...); err != nil {
		rds.Stop()
		return nil, nil, nil, nil, err
	}
	if b, err = startChatd(ctx, bin, env...); err != nil {
		a.stop()
		rds.Stop()
		return nil, nil, nil, nil, err
	}
	return rds, a, b, func() { b.stop(); a.stop(); rds.Stop() }, nil
}

func redisKill(ctx context.Context, cfg config, bin string) ([]row, error) {
	rds, a, b, stopAll, err := twoInstances(ctx, cfg, bin)
	if err != nil {
		return nil, err
	}
	defer stopAll()
	l, err := newLoad(ctx, a.base, "redis-kill", cfg.threads)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		l.run(ctx, func(i int) string { return []string{a.base, b.base}[i%2] }, stop)
		close(done)
	}()
	time.Sleep(cfg.load)
	rds.Kill()
	time.Sleep(cfg.outage)
	if err := rds.Restart(ctx); err != nil {
		return nil, err
	}
	// Every thread is probed from the moment Redis is back (the load's
	// in-flight turns finish meanwhile).
	back := time.Now()
	close(stop)
	usable, uerr := l.untilUsable(ctx, a.base, back, cfg.lease+10*time.Second)
	<-done
	acked, lost, err := l.lost(ctx, a.base)
	if err != nil {
		return nil, err
	}
	goal := cfg.lease + 2*time.Second
	return []row{
		{"Redis `kill -9` mid-load, restarted after " + cfg.outage.String(), fmt.Sprintf("%d acknowledged turns, %d lost; answers: %s", acked, lost, l.summary()),
			"0 lost, 0 × 500", status(lost == 0 && l.count(500) == 0 && acked > 0)},
		{"… every thread usable after Redis returns", fmt.Sprintf("%.1fs (%v)", usable.Seconds(), uerr), "≤ lease + 2s = " + goal.String(),
			status(uerr == nil && usable <= goal)},
	}, nil
}

func instanceKill(ctx context.Context, cfg config, bin string) ([]row, error) {
	_, a, b, stopAll, err := twoInstances(ctx, cfg, bin)
	if err != nil {
		return nil, err
	}
	defer stopAll()
	l, err := newLoad(ctx, a.base, "instance-kill", cfg.threads)
	if err != nil {
		return nil, err
	}
	// Slow turns (a second each) on b, so b dies holding many threads'
	// locks mid-turn.
	var killed atomic.Bool
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		l.run(ctx, func(i int) string {
			if i%2 == 1 && !killed.Load() {
				return b.base
			}
			return a.base
		}, stop)
		close(done)
	}()
	held := make(chan struct{})
	go func() {
		// Half the threads get a slow turn on b.
		for i, id := range l.threads {
			if i%4 == 3 {
				go call(ctx, http.MethodPost, b.base+"/v1/threads/"+id+"/turns", l.principal,
					`{"message":"/slow 200 `+strings.Repeat("w ", 20)+`"}`, nil)
			}
		}
		close(held)
	}()
	time.Sleep(cfg.load)
	<-held
	b.kill()
	killed.Store(true)
	dead := time.Now()
	close(stop)
	usable, uerr := l.untilUsable(ctx, a.base, dead, cfg.lease+10*time.Second)
	<-done
	acked, lost, err := l.lost(ctx, a.base)
	if err != nil {
		return nil, err
	}
	goal := cfg.lease + 2*time.Second
	return []row{
		{"one of two instances `kill -9`ed mid-load", fmt.Sprintf("%d acknowledged turns, %d lost; answers: %s", acked, lost, l.summary()),
			"0 lost, 0 × 500", status(lost == 0 && l.count(500) == 0 && acked > 0)},
		{"… every thread usable after the kill", fmt.Sprintf("%.1fs (%v)", usable.Seconds(), uerr), "≤ lease + 2s = " + goal.String(),
			status(uerr == nil && usable <= goal)},
	}, nil
}

// closedAfter returns how long after start the server closed conn: the
// time its read sees EOF or a reset, while feed trickles bytes.
func closedAfter(conn net.Conn, limit time.Duration, feed func()) (time.Duration, string) {
	start := time.Now()
	go feed()
	_ = conn.SetReadDeadline(start.Add(limit))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return limit, "still open"
	}
	first, _, _ := strings.Cut(string(got), "\r\n")
	return time.Since(start), first
}

func slowClients(ctx context.Context, cfg config, bin string) ([]row, error) {
	const header, body, write = time.Second, 2 * time.Second, 2 * time.Second
	in, err := startChatd(ctx, bin, "CHATD_READ_HEADER_TIMEOUT="+header.String(), "CHATD_READ_TIMEOUT="+body.String(),
		"CHATD_WRITE_TIMEOUT="+write.String(), "CHATD_RATE_LIMIT=0", "CHATD_MAX_BODY_BYTES=4194304")
	if err != nil {
		return nil, err
	}
	defer in.stop()
	addr := strings.TrimPrefix(in.base, "http://")
	var th struct{ ID string }
	if code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", "slow", "", &th); err != nil || code != http.StatusCreated {
		return nil, fmt.Errorf("create thread: %d %v", code, err)
	}
	trickle := func(conn net.Conn, s string) func() {
		return func() {
			for i := range len(s) {
				if _, err := conn.Write([]byte{s[i]}); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	limit := 30 * time.Second
	var rows []row

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	took, first := closedAfter(conn, limit, trickle(conn, "GET /v1/processors HTTP/1.1\r\nHost: x\r\nX-Slow: "+strings.Repeat("y", 1000)))
	conn.Close()
	rows = append(rows, row{"headers sent a byte every 100 ms", fmt.Sprintf("closed after %.1fs (%s)", took.Seconds(), first),
		"closed within CHATD_READ_HEADER_TIMEOUT (" + header.String() + ") + 1s", status(took <= header+time.Second)})

	conn, err = net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	payload := `{"message":"` + strings.Repeat("x", 1000) + `"}`
	fmt.Fprintf(conn, "POST /v1/threads/%s/turns HTTP/1.1\r\nHost: x\r\nX-Chatd-Principal: slow\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", th.ID, len(payload))
	took, first = closedAfter(conn, limit, trickle(conn, payload))
	conn.Close()
	rows = append(rows, row{"body sent a byte every 100 ms", fmt.Sprintf("closed after %.1fs (%s)", took.Seconds(), first),
		"408 and closed within CHATD_READ_TIMEOUT (" + body.String() + ") + 1s", status(took <= body+time.Second && strings.Contains(first, "408"))})

	// A streamed turn whose reply (3 MB, twice: the delta and the result)
	// is far more than socket buffers hold, to a client that never reads.
	conn, err = net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	big := `{"message":"` + strings.Repeat("z", 3<<20) + `"}`
	sent := time.Now()
	fmt.Fprintf(conn, "POST /v1/threads/%s/turns HTTP/1.1\r\nHost: x\r\nX-Chatd-Principal: slow\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", th.ID, len(big), big)
	// Not reading: wait until the turn is persisted, then see whether the
	// connection was dropped before all of it could be sent.
	persisted := time.Duration(0)
	for time.Since(sent) < limit {
		var page struct{ Messages []json.RawMessage }
		if code, err := call(ctx, http.MethodGet, in.base+"/v1/threads/"+th.ID+"/messages", "slow", "", &page); err == nil && code == 200 && len(page.Messages) == 2 {
			persisted = time.Since(sent)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(write + time.Second)
	_ = conn.SetReadDeadline(time.Now().Add(limit))
	got, rerr := io.ReadAll(bufio.NewReader(conn))
	conn.Close()
	// A chunked response that was sent whole ends with the last chunk.
	completed := bytes.HasSuffix(got, []byte("0\r\n\r\n"))
	rows = append(rows, row{"a streamed 3 MB reply to a client that never reads", fmt.Sprintf("turn persisted after %.1fs; stream dropped after %.1f MB of ~9 MB (%v)",
		persisted.Seconds(), float64(len(got))/(1<<20), rerr), "dropped after CHATD_WRITE_TIMEOUT (" + write.String() + "), turn kept",
		status(persisted > 0 && !completed)})
	return rows, nil
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

func flood(ctx context.Context, cfg config, bin string) ([]row, error) {
	env := []string{"CHATD_RATE_LIMIT=600/1m"}
	if cfg.refusalDelay != "" {
		env = append(env, "CHATD_RATE_LIMIT_DELAY="+cfg.refusalDelay)
	}
	in, err := startChatd(ctx, bin, env...)
	if err != nil {
		return nil, err
	}
	defer in.stop()
	// The normal principal's turns, idle and during the flood, are two
	// principals' (each under the limit of 600 a minute), so that neither
	// phase is refused for the other's requests.
	measure := func(principal string, n int) ([]time.Duration, error) {
		var th struct{ ID string }
		if code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", principal, "", &th); err != nil || code != http.StatusCreated {
			return nil, fmt.Errorf("create thread: %d %v", code, err)
		}
		var out []time.Duration
		for range n {
			t := time.Now()
			code, err := call(ctx, http.MethodPost, in.base+"/v1/threads/"+th.ID+"/turns", principal, `{"message":"hi"}`, nil)
			if err != nil || code != http.StatusOK {
				return nil, fmt.Errorf("normal turn: %d %v", code, err)
			}
			out = append(out, time.Since(t))
			time.Sleep(5 * time.Millisecond)
		}
		return out, nil
	}
	idle, err := measure("normal-idle", cfg.samples)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	var floods, refused atomic.Int64
	var wg sync.WaitGroup
	flooding := time.Now()
	for range cfg.flooders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, _ := call(ctx, http.MethodGet, in.base+"/v1/processors", "flooder", "", nil)
				floods.Add(1)
				if code == http.StatusTooManyRequests {
					refused.Add(1)
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	busy, err := measure("normal", cfg.samples)
	close(stop)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	flooded := time.Since(flooding)
	ratio50 := float64(percentile(busy, 50)) / float64(percentile(idle, 50))
	ratio99 := float64(percentile(busy, 99)) / float64(percentile(idle, 99))
	return []row{{fmt.Sprintf("a principal flooding (%d clients, no pause) beside a normal one", cfg.flooders),
		fmt.Sprintf("normal p50 %s → %s (%.2f×), p99 %s → %s (%.2f×); flooder: %d requests in %.1fs, %d refused 429",
			percentile(idle, 50).Round(10*time.Microsecond), percentile(busy, 50).Round(10*time.Microsecond), ratio50,
			percentile(idle, 99).Round(10*time.Microsecond), percentile(busy, 99).Round(10*time.Microsecond), ratio99, floods.Load(), flooded.Seconds(), refused.Load()),
		"≤ 2× idle", status(ratio50 <= 2 && ratio99 <= 2)}}, nil
}

func memoryBound(ctx context.Context, cfg config, bin string) ([]row, error) {
	const limit = 32 << 20
	in, err := startChatd(ctx, bin, "CHATD_MEMORY_MAX_BYTES="+strconv.Itoa(limit), "CHATD_RATE_LIMIT=0")
	if err != nil {
		return nil, err
	}
	defer in.stop()
	text := strings.Repeat("m", 60<<10)
	turns, full := 0, false
	for turns < 5000 && !full {
		var th struct{ ID string }
		code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", "filler", "", &th)
		if err != nil {
			return nil, err
		}
		if code == http.StatusInsufficientStorage {
			full = true
			break
		}
		for range 10 {
			code, err = call(ctx, http.MethodPost, in.base+"/v1/threads/"+th.ID+"/turns", "filler", `{"message":"`+text+`"}`, nil)
			if err != nil {
				return nil, err
			}
			if code == http.StatusInsufficientStorage {
				full = true
				break
			}
			turns++
		}
	}
	resp, err := http.Get(in.base + "/metrics")
	if err != nil {
		return nil, err
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	heap := 0.0
	for _, line := range strings.Split(string(metrics), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			heap, _ = strconv.ParseFloat(v, 64)
		}
	}
	return []row{{"embedded store filled with 120 KB turns",
		fmt.Sprintf("507 store_full after %d turns (%.1f MB of messages); heap in use %.0f MB", turns, float64(turns)*120/1024, heap/(1<<20)),
		"507 at CHATD_MEMORY_MAX_BYTES (32 MB), heap bounded", status(full && heap < 4*limit)}}, nil
}
