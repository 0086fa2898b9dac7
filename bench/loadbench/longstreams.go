package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Rows 9a–9d: long streamed agent turns, as a model streams them. A fake
// OpenAI-compatible model in this process streams every call for
// modelChunks × modelEvery, each chunk's text the time it was sent; chatd
// runs as its own process (built from the tree, on the benchmark's Redis),
// so its memory, goroutines and CPU are its own.
const (
	modelChunks = 50
	modelEvery  = 200 * time.Millisecond
)

// streamsLadder is row 9a's N: the short run's, and -streams-full's.
var (
	streamsShort = []int{1000, 2500}
	streamsFull  = []int{1000, 2500, 5000, 10000}
)

// streamGoalP99 is row 9a's goal for the added delay.
const streamGoalP99 = 50 * time.Millisecond

// measureLongStreams is rows 9a–9d.
func (b *bench) measureLongStreams(ctx context.Context) ([]row, error) {
	if b.cfg.noStreams {
		return nil, nil
	}
	limit := raiseFileLimit()
	model, err := b.serveModel()
	if err != nil {
		return nil, err
	}
	bin, err := buildChatd(ctx)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Dir(bin))
	ladder := streamsShort
	if b.cfg.streamsFull {
		ladder = streamsFull
	}
	var rows []row
	var first *streamStep
	for _, n := range ladder {
		// Each stream holds a descriptor in this process and in chatd
		// (the client's connection); the model's streams share HTTP/2
		// connections, up to 250 a connection.
		if n+n/250+256 > limit {
			fmt.Fprintf(os.Stderr, "loadbench: row 9a stops before N=%d: %d file descriptors allowed\n", n, limit)
			break
		}
		step, err := b.streamStep(ctx, bin, model, n)
		if err != nil {
			return nil, fmt.Errorf("N=%d: %w", n, err)
		}
		fmt.Fprintf(os.Stderr, "loadbench: 9a N=%d: %s\n", n, step.summary())
		rows = append(rows, row{id: "9a", scenario: fmt.Sprintf("%d streamed agent turns at once, 10 s each: %s", n, step.summary()),
			res: step.res, inner: true, ratio: ratio(float64(step.p99()), float64(time.Millisecond)),
			ratioIs: "p99 added delay model chunk → client delta, ms; goal ≤ 50"})
		if first == nil {
			first = step
		}
		if step.completed < n || step.p99() > streamGoalP99 {
			break
		}
	}
	rows = append(rows, row{id: "9c", scenario: fmt.Sprintf("Redis per streamed turn (N=%d): %s", first.n, first.redisSummary()),
		res: first.res, inner: true, ratio: first.commandsPerTurnSecond(), ratioIs: "Redis commands per second of streaming per turn"})
	r9b, err := b.reattachStreams(ctx, bin, model, 1000)
	if err != nil {
		return nil, fmt.Errorf("row 9b: %w", err)
	}
	r9d, err := b.relayStreams(ctx, model, first)
	if err != nil {
		return nil, fmt.Errorf("row 9d: %w", err)
	}
	return append(rows, r9b, r9d), nil
}

// raiseFileLimit raises this process's open-file limit to its hard limit
// (chatd, started from here, inherits it) and returns it.
func raiseFileLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 1024
	}
	l.Cur = l.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	return int(l.Cur)
}

// serveModel starts the fake model and returns its /v1 base URL.
func (b *bench) serveModel() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		tick := time.NewTicker(modelEvery)
		defer tick.Stop()
		buf := make([]byte, 0, 256)
		for i := range modelChunks {
			if i > 0 {
				select {
				case <-tick.C:
				case <-r.Context().Done():
					return
				}
			}
			// The chunk's text is the time it is sent, for the client to
			// subtract from the time the delta reaches it.
			buf = append(buf[:0], `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`...)
			buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
			buf = append(buf, ` "}}]}`+"\n\n"...)
			if _, err := w.Write(buf); err != nil {
				return
			}
			_ = rc.Flush()
		}
		_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	})
	// HTTP/2 without TLS for chatd (CHATD_AGENT_H2C), HTTP/1.1 for row
	// 9d's relay.
	srv := &http.Server{Handler: mux, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	b.closers = append(b.closers, func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/v1", nil
}

// buildChatd builds chatd into a temporary directory.
func buildChatd(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "loadbench-chatd-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "chatd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/chatd")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return bin, cmd.Run()
}

// chatdProc is chatd running as a process of its own.
type chatdProc struct {
	cmd  *exec.Cmd
	base string
}

// startChatdProc runs bin as the agent over model, on the benchmark's
// Redis, with the per-principal stream cap raised past what the rows open
// (every stream here is one principal's).
func (b *bench) startChatdProc(ctx context.Context, bin, model string) (*chatdProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "CHATD_ADDR="+addr, "CHATD_REDIS_URL=redis://"+b.redis.Addr()+"/0",
		"CHATD_PROCESSORS=agent", "CHATD_DEFAULT_PROCESSOR=agent", "CHATD_AGENT_BASE_URL="+model, "CHATD_AGENT_MODEL=fake", "CHATD_AGENT_H2C=true",
		"CHATD_AGENT_ASK_USER=false", "CHATD_MAX_STREAMS=100000", "CHATD_RATE_LIMIT=0", "CHATD_MAX_THREADS=1000000",
		"CHATD_LOG_LEVEL=error", "CHATD_UI=false")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &chatdProc{cmd: cmd, base: "http://" + addr}
	for range 300 {
		if resp, err := http.Get(p.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return nil, errors.New("chatd not ready within 15s")
}

func (p *chatdProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// usage is what chatd's process holds at one moment.
type usage struct {
	rss, heap, live, stacks, goroutines float64
	cpu                                 time.Duration
}

func (p *chatdProc) usage() (usage, error) {
	var u usage
	m, err := scrape(p.base + "/metrics")
	if err != nil {
		return u, err
	}
	u.heap, u.live = m["go_memstats_heap_inuse_bytes"], m["go_gc_heap_live_bytes"]
	u.stacks, u.goroutines = m["go_memstats_stack_inuse_bytes"], m["go_goroutines"]
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			u.rss = kb * 1024
		}
	}
	u.cpu = time.Duration(m["process_cpu_seconds_total"] * float64(time.Second))
	return u, nil
}

// scrape reads the samples without labels of a Prometheus endpoint.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && !strings.HasPrefix(name, "#") {
			out[name], _ = strconv.ParseFloat(value, 64)
		}
	}
	return out, sc.Err()
}

// streamStep is one N of row 9a.
type streamStep struct {
	n, completed  int
	res           loadResult
	delays        []time.Duration // sorted
	before, plato usage
	cpu           time.Duration
	redisCmds     map[string]float64 // commands during the step, by name
	redisBytes    float64            // bytes Redis received during the step
}

func (s *streamStep) p50() time.Duration { return percentile(s.delays, 50) }
func (s *streamStep) p99() time.Duration { return percentile(s.delays, 99) }

func (s *streamStep) summary() string {
	n := float64(s.n)
	return fmt.Sprintf("%d/%d completed; added delay p50 %.1f ms, p99 %.1f ms; per stream RSS %.1f KiB, Go heap %.1f KiB in use and %.1f KiB live, stacks %.1f KiB, %.1f goroutines; CPU %.0f µs per chunk",
		s.completed, s.n, float64(s.p50())/1e6, float64(s.p99())/1e6,
		(s.plato.rss-s.before.rss)/n/1024, (s.plato.heap-s.before.heap)/n/1024,
		(s.plato.live-s.before.live)/n/1024, (s.plato.stacks-s.before.stacks)/n/1024, (s.plato.goroutines-s.before.goroutines)/n,
		float64(s.cpu.Microseconds())/(n*modelChunks))
}

func (s *streamStep) total() float64 {
	t := 0.0
	for _, v := range s.redisCmds {
		t += v
	}
	return t
}

func (s *streamStep) commandsPerTurnSecond() float64 {
	return s.total() / float64(s.n) / (modelChunks * modelEvery).Seconds()
}

func (s *streamStep) redisSummary() string {
	n := float64(s.n)
	names := slices.Collect(maps.Keys(s.redisCmds))
	// The most frequent first, by name among equals.
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(s.redisCmds[b], s.redisCmds[a]), strings.Compare(a, b))
	})
	var top []string
	for i, name := range names {
		if i == 7 {
			top = append(top, "…")
			break
		}
		top = append(top, fmt.Sprintf("%s %.1f", name, s.redisCmds[name]/n))
	}
	return fmt.Sprintf("%.1f commands (%s), %.1f KiB sent to Redis; %.2f commands and %.2f script calls (appends included) per second of streaming",
		s.total()/n, strings.Join(top, ", "), s.redisBytes/n/1024, s.commandsPerTurnSecond(),
		s.redisCmds["evalsha"]/n/(modelChunks*modelEvery).Seconds())
}

// streamStep runs n streamed agent turns at once on a fresh chatd.
func (b *bench) streamStep(ctx context.Context, bin, model string, n int) (*streamStep, error) {
	p, err := b.startChatdProc(ctx, bin, model)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	c := &client{base: p.base, http: streamHTTPClient()}
	defer c.http.CloseIdleConnections()
	ids, err := createThreads(ctx, c, n)
	if err != nil {
		return nil, err
	}
	step := &streamStep{n: n}
	runtimeSettle()
	if step.before, err = p.usage(); err != nil {
		return nil, err
	}
	statsBefore, err := b.redisStats(ctx)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i, id := range ids {
		wg.Go(func() {
			delays, ok, err := c.agentStream(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			step.delays = append(step.delays, delays...)
			step.res.inner = append(step.res.inner, delays...)
			if err != nil {
				step.res.errors++
				if step.res.firstErr == nil {
					step.res.firstErr = err
				}
			}
			if ok {
				step.completed++
				step.res.done++
			}
		})
		if i%200 == 199 {
			time.Sleep(10 * time.Millisecond) // open them over a moment, not all in one
		}
	}
	// The plateau: every stream open, halfway through.
	time.Sleep(time.Until(start.Add(modelChunks * modelEvery / 2)))
	if step.plato, err = p.usage(); err != nil {
		return nil, err
	}
	wg.Wait()
	step.res.elapsed = time.Since(start)
	after, err := p.usage()
	if err != nil {
		return nil, err
	}
	step.cpu = after.cpu - step.before.cpu
	statsAfter, err := b.redisStats(ctx)
	if err != nil {
		return nil, err
	}
	step.redisCmds = map[string]float64{}
	for name, v := range statsAfter {
		if name == "net_input_bytes" {
			step.redisBytes = v - statsBefore[name]
			continue
		}
		if d := v - statsBefore[name]; d > 0 {
			step.redisCmds[name] = d
		}
	}
	slices.Sort(step.delays)
	slices.Sort(step.res.inner)
	// A stream that failed is reported, not fatal: it is what the row
	// counts.
	step.res.errors = 0
	return step, nil
}

// runtimeSettle gives chatd a moment after the threads' creation.
func runtimeSettle() { time.Sleep(500 * time.Millisecond) }

// redisStats is INFO commandstats' calls by command (the commands scripts
// run included) and the bytes Redis has received.
func (b *bench) redisStats(ctx context.Context) (map[string]float64, error) {
	info, err := b.rdb.Info(ctx, "commandstats", "stats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, fields, _ := strings.Cut(rest, ":")
			calls, _, _ := strings.Cut(strings.TrimPrefix(fields, "calls="), ",")
			if name == "info" {
				continue
			}
			out[name], _ = strconv.ParseFloat(calls, 64)
		}
		if v, ok := strings.CutPrefix(line, "total_net_input_bytes:"); ok {
			out["net_input_bytes"], _ = strconv.ParseFloat(v, 64)
		}
	}
	return out, nil
}

// streamHTTPClient holds one connection per stream.
func streamHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 20000, IdleConnTimeout: 30 * time.Second}}
}

// createThreads creates n threads, 32 at a time.
func createThreads(ctx context.Context, c *client, n int) ([]string, error) {
	ids := make([]string, n)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				var th struct{ ID string }
				if err := c.expect(ctx, http.MethodPost, "/v1/threads", nil, http.StatusCreated, &th); err != nil {
					errs <- err
					return
				}
				ids[i] = th.ID
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
		return ids, nil
	}
}

// agentStream streams a turn on threadID and returns the added delay of
// every delta, model chunk to client, and whether it ended with a
// completed turn.
func (c *client) agentStream(ctx context.Context, threadID string) ([]time.Duration, bool, error) {
	resp, err := c.openEvents(ctx, http.MethodPost, "/v1/threads/"+threadID+"/turns", -1)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	evs, delays, err := readStreamEvents(resp.Body, nil)
	if err != nil {
		return delays, false, err
	}
	return delays, completedTurn(evs), nil
}

func completedTurn(evs []streamEvent) bool {
	return len(evs) > 0 && evs[len(evs)-1].name == "turn.completed" && strings.Contains(evs[len(evs)-1].data, `"status":"completed"`)
}

// openEvents starts a stream: a turn (POST) or a reattach (GET, after
// lastEventID when it is not negative).
func (c *client) openEvents(ctx context.Context, method, path string, lastEventID int) (*http.Response, error) {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"message":"stream"}`)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID >= 0 {
		req.Header.Set("Last-Event-ID", strconv.Itoa(lastEventID))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: status %d", method, path, resp.StatusCode)
	}
	return resp, nil
}

// reattachStreams is row 9b: 2n streamed agent turns over two instances on
// one Redis, n on each; the clients of the first instance's leave halfway
// through and reattach on the second with Last-Event-ID. It counts the
// reattached streams whose events, both halves together, are every event
// of the turn exactly once, in order (IDs 1, 2, 3… to turn.completed).
func (b *bench) reattachStreams(ctx context.Context, bin, model string, n int) (row, error) {
	a, err := b.startChatdProc(ctx, bin, model)
	if err != nil {
		return row{}, err
	}
	defer a.stop()
	other, err := b.startChatdProc(ctx, bin, model)
	if err != nil {
		return row{}, err
	}
	defer other.stop()
	ca, cb := &client{base: a.base, http: streamHTTPClient()}, &client{base: other.base, http: streamHTTPClient()}
	defer ca.http.CloseIdleConnections()
	defer cb.http.CloseIdleConnections()
	idsA, err := createThreads(ctx, ca, n)
	if err != nil {
		return row{}, err
	}
	idsB, err := createThreads(ctx, cb, n)
	if err != nil {
		return row{}, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var res loadResult
	exact, completedB := 0, 0
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			_, ok, _ := cb.agentStream(ctx, idsB[i])
			mu.Lock()
			defer mu.Unlock()
			if ok {
				completedB++
			}
		})
		wg.Go(func() {
			whole, delays, err := reattachHalfway(ctx, ca, cb, idsA[i])
			mu.Lock()
			defer mu.Unlock()
			res.inner = append(res.inner, delays...)
			if err == nil && whole {
				exact++
				res.done++
			} else if res.firstErr == nil {
				res.firstErr = err
			}
		})
		if i%200 == 199 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	slices.Sort(res.inner)
	note := ""
	if res.firstErr != nil {
		note = fmt.Sprintf("; first failure: %v", res.firstErr)
	}
	return row{id: "9b", scenario: fmt.Sprintf("%d streamed agent turns on each of two instances; %d reattached on the other mid-flight: %d exactly once in order, %d/%d of the rest completed%s",
		n, n, exact, completedB, n, note), res: res, inner: true,
		ratio: ratio(float64(exact), float64(n)), ratioIs: "reattached streams with every event exactly once, in order"}, nil
}

// reattachHalfway streams a turn on threadID from a, leaves once it has
// half the model's chunks, reattaches on b after the last event it got,
// and reports whether the two halves hold every event once, in order.
func reattachHalfway(ctx context.Context, a, b *client, threadID string) (bool, []time.Duration, error) {
	resp, err := a.openEvents(ctx, http.MethodPost, "/v1/threads/"+threadID+"/turns", -1)
	if err != nil {
		return false, nil, err
	}
	deltas := 0
	first, delays, err := readStreamEvents(resp.Body, func(ev streamEvent) bool {
		if ev.name == "text.delta" {
			deltas++
		}
		return deltas == modelChunks/2
	})
	resp.Body.Close()
	if err != nil || len(first) == 0 {
		return false, delays, fmt.Errorf("first half: %v", err)
	}
	turnID := ""
	if _, rest, ok := strings.Cut(first[0].data, `"turn_id":"`); ok {
		turnID, _, _ = strings.Cut(rest, `"`)
	}
	last := first[len(first)-1].id
	resp, err = b.openEvents(ctx, http.MethodGet, "/v1/threads/"+threadID+"/turns/"+turnID+"/events", last)
	if err != nil {
		return false, delays, err
	}
	defer resp.Body.Close()
	rest, more, err := readStreamEvents(resp.Body, nil)
	delays = append(delays, more...)
	if err != nil {
		return false, delays, err
	}
	all := append(first, rest...)
	for i, ev := range all {
		if ev.id != i+1 {
			return false, delays, fmt.Errorf("event %d has ID %d", i+1, ev.id)
		}
	}
	return completedTurn(all), delays, nil
}

// streamEvent is one event of a chatd stream.
type streamEvent struct {
	id         int
	name, data string
}

// readStreamEvents reads a chatd event stream to its end, returning its
// events and the added delay of each text delta (its text is the time the
// model sent it). stop, when set, is called after each event and ends the
// read when it returns true.
func readStreamEvents(r io.Reader, stop func(streamEvent) bool) ([]streamEvent, []time.Duration, error) {
	var evs []streamEvent
	var delays []time.Duration
	var ev streamEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && ev.name != "":
			if ev.name == "text.delta" {
				if _, rest, ok := strings.Cut(ev.data, `"delta":"`); ok {
					stamp, _, _ := strings.Cut(rest, " ")
					if ns, err := strconv.ParseInt(stamp, 10, 64); err == nil {
						delays = append(delays, time.Since(time.Unix(0, ns)))
					}
				}
			}
			evs = append(evs, ev)
			if stop != nil && stop(ev) {
				return evs, delays, nil
			}
			ev = streamEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.Atoi(strings.TrimPrefix(line, "id: "))
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return evs, delays, sc.Err()
}

// relayStreams is row 9d: the same n streams as 9a's first step, relayed by
// a minimal Node server built on Vercel's resumable-stream (relay/, its
// packages pinned by relay/package-lock.json) on the benchmark's Redis.
// The ratio is chatd's p99 added delay ÷ the relay's, at the same N.
func (b *bench) relayStreams(ctx context.Context, model string, chatd *streamStep) (row, error) {
	n := chatd.n
	port, err := freePort()
	if err != nil {
		return row{}, err
	}
	cmd := exec.Command("node", "relay.mjs")
	cmd.Dir = filepath.Join("bench", "loadbench", "relay")
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+b.redis.Addr(), "MODEL_URL="+model, "PORT="+port)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return row{}, err
	}
	if err := cmd.Start(); err != nil {
		return row{}, fmt.Errorf("node relay (run scripts/ensure-node-deps.sh): %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		return row{}, fmt.Errorf("node relay did not start (run scripts/ensure-node-deps.sh): %q %v", line, err)
	}
	rssOf := func() float64 {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
				return kb * 1024
			}
		}
		return 0
	}
	c := &client{base: "http://127.0.0.1:" + port, http: streamHTTPClient()}
	defer c.http.CloseIdleConnections()
	before := rssOf()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var res loadResult
	var firstErr error
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/streams/s"+strconv.Itoa(i)+"-"+strconv.FormatInt(start.UnixNano(), 36), nil)
			if err != nil {
				return
			}
			resp, err := c.http.Do(req)
			var evs []streamEvent
			var delays []time.Duration
			if err == nil {
				evs, delays, err = readStreamEvents(resp.Body, nil)
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			res.inner = append(res.inner, delays...)
			if err == nil && len(evs) > 0 && evs[len(evs)-1].name == "done" {
				res.done++
			} else if firstErr == nil {
				firstErr = err
			}
		})
		if i%200 == 199 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(time.Until(start.Add(modelChunks * modelEvery / 2)))
	plateau := rssOf()
	wg.Wait()
	res.elapsed = time.Since(start)
	slices.Sort(res.inner)
	note := ""
	if firstErr != nil {
		note = fmt.Sprintf("; first failure: %v", firstErr)
	}
	p99 := percentile(res.inner, 99)
	return row{id: "9d", scenario: fmt.Sprintf("the peer: %d streams relayed by resumable-stream (Node) on the same Redis: %d/%d completed; added delay p50 %.1f ms, p99 %.1f ms; RSS %.1f KiB a stream (chatd %.1f)%s",
		n, res.done, n, float64(percentile(res.inner, 50))/1e6, float64(p99)/1e6, (plateau-before)/float64(n)/1024,
		(chatd.plato.rss-chatd.before.rss)/float64(n)/1024, note), res: res, inner: true,
		ratio: ratio(float64(chatd.p99()), float64(p99)), ratioIs: "chatd's p99 added delay ÷ the relay's, same N (below 1: chatd ahead)"}, nil
}

// freePort is a free 127.0.0.1 port.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}
