package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/processor/echo"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// bench holds what every row shares: the redis-server, the HTTP client, and
// the servers started so far (stopped by close).
type bench struct {
	cfg     config
	bin     string // redis-server
	redis   *redistest.Process
	rdb     *redis.Client
	http    *http.Client
	closers []func()
	// memoryLine is the Redis memory per stored message, measured while
	// seeding row 5.
	memoryLine string
}

func newBench(ctx context.Context, cfg config) (*bench, error) {
	bin, err := redistest.FindServer(ctx, cfg.redisBin)
	if err != nil {
		return nil, fmt.Errorf("%w: install it (e.g. apt-get install redis-server) or pass -redis-server", err)
	}
	// The server runs in a temporary directory that Stop removes; on Linux
	// it is killed with the benchmark even when no cleanup runs.
	srv, err := redistest.Launch(ctx, redistest.Options{Bin: bin})
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, bin: bin, redis: srv, http: newHTTPClient(cfg.concurrency)}
	b.closers = append(b.closers, srv.Stop)
	b.rdb = b.newRedisClient()
	b.closers = append(b.closers, func() { _ = b.rdb.Close() })
	return b, nil
}

// close stops everything, the most recently started first.
func (b *bench) close() {
	b.http.CloseIdleConnections()
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// newRedisClient returns a client on the benchmark's redis-server with a
// pool large enough that no request waits for a connection.
func (b *bench) newRedisClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: b.redis.Addr(), PoolSize: 2*b.cfg.concurrency + 4})
}

// newRedisStore returns a chatd Redis store on its own client; it is closed
// with the bench.
func (b *bench) newRedisStore(opts store.Options) *store.Redis {
	if opts.MaxThreads == 0 {
		// Every row's threads belong to one principal, and row 5 seeds them
		// by the thousand: the quota is not what the rows measure.
		opts.MaxThreads = math.MaxInt32
	}
	st := store.NewRedis(b.newRedisClient(), opts)
	b.closers = append(b.closers, func() { _ = st.Close() })
	return st
}

// newChatd returns chatd's handler on st with auth mode none and the echo
// processor: as shipped (it reads no history) or, with readHistory, one
// that decodes its whole history window first, as a processor that uses
// the conversation would.
func newChatd(st api.Store, cfg turn.Config, readHistory bool) (http.Handler, error) {
	return newChatdWith(st, cfg, readHistory, nil)
}

// newChatdWith is newChatd with its dependencies adjusted by adjust.
func newChatdWith(st api.Store, cfg turn.Config, readHistory bool, adjust func(*api.Deps)) (http.Handler, error) {
	var p processor.Processor = echo.New()
	if readHistory {
		p = historyReader{p}
	}
	reg, err := processor.NewRegistry(map[string]processor.Processor{"echo": p}, "echo")
	if err != nil {
		return nil, err
	}
	metrics := api.NewMetrics()
	// Instances on one Redis reach each other's turns through it, for stops.
	var relay turn.Relay
	if r, ok := st.(*store.Redis); ok {
		relay = r.Relay()
	}
	engine := turn.New(turn.Deps{Store: st, Processors: reg, Observer: metrics, Config: cfg, Relay: relay})
	deps := api.Deps{Store: st, Engine: engine, Processors: reg, Auth: api.AnonymousAuth{}, Metrics: metrics, Config: api.DefaultConfig}
	if adjust != nil {
		adjust(&deps)
	}
	return api.NewServer(deps), nil
}

// chatd serves chatd on st (its dependencies adjusted by adjust, if any)
// and makes a thread for each client.
func (b *bench) chatd(ctx context.Context, st api.Store, adjust func(*api.Deps)) (*client, []string, error) {
	return b.chatdBehind(ctx, st, nil, adjust)
}

// chatdBehind is chatd with its handler wrapped by wrap, if any.
func (b *bench) chatdBehind(ctx context.Context, st api.Store, wrap func(http.Handler) http.Handler, adjust func(*api.Deps)) (*client, []string, error) {
	h, err := newChatdWith(st, turn.DefaultConfig, b.cfg.readHistory, adjust)
	if err != nil {
		return nil, nil, err
	}
	if wrap != nil {
		h = wrap(h)
	}
	c, err := b.serve(h)
	if err != nil {
		return nil, nil, err
	}
	ids, err := threads(ctx, c, b.cfg.concurrency)
	if err != nil {
		return nil, nil, err
	}
	return c, ids, nil
}

// historyReader decodes the history window before delegating. It does not
// implement processor.HistoryWindower, so it gets the whole window.
type historyReader struct{ next processor.Processor }

func (h historyReader) Describe() string { return h.next.Describe() }

func (h historyReader) Process(ctx context.Context, in processor.Input, emit processor.Emit) (processor.Output, error) {
	if _, err := in.History.Decode(); err != nil {
		return processor.Output{}, err
	}
	return h.next.Process(ctx, in, emit)
}

// serve starts a real HTTP server for h on a free 127.0.0.1 port and returns
// a client for it; the server is shut down with the bench.
func (b *bench) serve(h http.Handler) (*client, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b.closers = append(b.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &client{base: "http://" + ln.Addr().String(), http: b.http}, nil
}

// spec is a row's bound: n operations at the configured concurrency.
func (b *bench) spec(n int) loadSpec {
	return loadSpec{requests: n, concurrency: b.cfg.concurrency, limit: b.cfg.rowLimit}
}

// warmup runs the unmeasured operations before a row.
func (b *bench) warmup(ctx context.Context, fn op) error {
	if b.cfg.warmup == 0 {
		return nil
	}
	spec := b.spec(b.cfg.warmup)
	spec.limit /= 4
	res := runLoad(ctx, spec, fn)
	if res.errors > 0 {
		return fmt.Errorf("warm-up: %d failed requests; first: %w", res.errors, res.firstErr)
	}
	return ctx.Err()
}

// measured runs a warm-up and then the measured operations.
func (b *bench) measured(ctx context.Context, n int, fn op) (loadResult, error) {
	if err := b.warmup(ctx, fn); err != nil {
		return loadResult{}, err
	}
	res := runLoad(ctx, b.spec(n), fn)
	return res, ctx.Err()
}

// compare measures several operations against each other: a warm-up of
// each, then cfg.rounds rounds in which each runs its share of n operations
// in turn. Interleaving spreads whatever else the machine is doing over all
// of them alike, so their ratios are steadier than back-to-back runs. Every
// other round runs them in reverse order: where an operation stands in a
// round matters (a streamed turn measured first in each round of two came
// out 5-8 % slower than measured second), so over an even number of rounds
// each stands at every place alike.
func (b *bench) compare(ctx context.Context, n int, ops ...op) ([]loadResult, error) {
	for _, fn := range ops {
		if err := b.warmup(ctx, fn); err != nil {
			return nil, err
		}
	}
	out := make([]loadResult, len(ops))
	spec := b.spec(0)
	spec.limit /= time.Duration(b.cfg.rounds)
	for round := range b.cfg.rounds {
		share := n / b.cfg.rounds
		if round == 0 {
			share += n % b.cfg.rounds
		}
		for k := range ops {
			i := k
			if round%2 == 1 {
				i = len(ops) - 1 - k
			}
			spec.requests = share
			out[i] = out[i].merge(runLoad(ctx, spec, ops[i]))
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// historyText describes what rows 1, 2, 4 and 6's processor reads.
func (b *bench) historyText() string {
	if b.cfg.readHistory {
		return fmt.Sprintf("reading its whole history window (%d)", turn.DefaultConfig.HistoryWindow)
	}
	return "as shipped (reads no history)"
}

// maybeProfile profiles row id's load when -cpuprofile asks for that row.
func (b *bench) maybeProfile(ctx context.Context, id string, fn op) error {
	if b.cfg.cpuProfile == "" || b.cfg.profileRow != id {
		return nil
	}
	if err := b.profile(ctx, fn); err != nil {
		return fmt.Errorf("row %s: %w", id, err)
	}
	return nil
}

// profile runs fn for cfg.profileFor (at most profileRequests operations)
// under the CPU profiler, writing the profile to cfg.cpuProfile. It runs
// after the row it profiles has been measured, so profiling never skews the
// table, and long enough for the profile to have samples to speak of.
func (b *bench) profile(ctx context.Context, fn op) error {
	f, err := os.Create(b.cfg.cpuProfile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	before, err := b.cpuTimes(ctx)
	if err != nil {
		return err
	}
	res := runLoad(ctx, loadSpec{requests: profileRequests, concurrency: b.cfg.concurrency, limit: b.cfg.profileFor}, fn)
	after, err := b.cpuTimes(ctx)
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	if res.errors > 0 {
		return fmt.Errorf("profiled run: %d failed requests; first: %w", res.errors, res.firstErr)
	}
	if res.done > 0 {
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(res.done) }
		fmt.Fprintf(os.Stderr, "profiled run: %.0f ops/s; CPU per op: %.0f µs in this process (clients and servers; %.0f in the kernel), "+
			"%.0f µs in redis-server (%.0f in the kernel)",
			res.throughput(), per(after.self-before.self), per(after.selfSys-before.selfSys),
			per(after.redis-before.redis), per(after.redisSys-before.redisSys))
		if after.redisFaults >= 0 && before.redisFaults >= 0 {
			fmt.Fprintf(os.Stderr, "; %.2f page faults per op in redis-server", float64(after.redisFaults-before.redisFaults)/float64(res.done))
		}
		fmt.Fprintln(os.Stderr)
	}
	return errors.Join(ctx.Err(), f.Close())
}

// cpuTimes is the CPU time used so far by this process and by the
// benchmark's redis-server (INFO cpu), each with its part in the kernel, and
// redis-server's minor page faults (-1 where /proc does not tell): memory a
// server touches for the first time costs it a fault per page, which an
// instruction count of its own code does not show.
type cpuTimes struct {
	self, selfSys, redis, redisSys time.Duration
	redisFaults                    int64
}

func (b *bench) cpuTimes(ctx context.Context) (cpuTimes, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuTimes{}, err
	}
	info, err := b.rdb.Info(ctx, "cpu", "server").Result()
	if err != nil {
		return cpuTimes{}, err
	}
	t := cpuTimes{
		self:        time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		selfSys:     time.Duration(ru.Stime.Nano()),
		redisFaults: -1,
	}
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_cpu_sys", "used_cpu_user":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("INFO cpu %s: %w", k, err)
			}
			d := time.Duration(f * float64(time.Second))
			t.redis += d
			if k == "used_cpu_sys" {
				t.redisSys = d
			}
		case "process_id":
			t.redisFaults = minorFaults(v)
		}
	}
	return t, nil
}

// minorFaults is a process's minor page faults so far, from /proc, or -1.
func minorFaults(pid string) int64 {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return -1
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the 3rd field of the line, minflt the 10th.
	_, rest, ok := strings.Cut(string(stat), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 8 {
		return -1
	}
	n, err := strconv.ParseInt(fields[7], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// profileRequests bounds the profiled run in count as well as in time.
const profileRequests = 200000

// threads creates n threads bound to the echo processor.
func threads(ctx context.Context, c *client, n int) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		id, err := c.createThread(ctx, "echo")
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// turnText is the user's message of every echo turn: about twenty words, a
// typical chat line.
const turnText = "Could you summarise the three main points of the article about loopback benchmarks and tell me which one matters most?"

var turnBody = []byte(`{"message":"` + turnText + `"}`)

// streamBody asks echo to stream twenty words, one delta each, without delay.
var streamBody = []byte(`{"message":"/slow 0 ` + strings.Repeat("word ", 19) + `end"}`)

// streamText is streamBody's message, as the frontend protocols send it.
var streamText = "/slow 0 " + strings.Repeat("word ", 19) + "end"

// aiSDKBody is the body DefaultChatTransport posts for streamText.
func aiSDKBody(threadID string) []byte {
	return []byte(`{"id":"` + threadID + `","trigger":"submit-message","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"` + streamText + `"}]}]}`)
}

// aguiBody is the RunAgentInput HttpAgent posts for streamText.
func aguiBody(threadID string) []byte {
	return []byte(`{"threadId":"` + threadID + `","runId":"r1","state":{},"tools":[],"context":[],"forwardedProps":{},"messages":[{"id":"m1","role":"user","content":"` + streamText + `"}]}`)
}

// elicitBody pauses the echo processor with a two-field form.
var elicitBody = []byte(`{"message":"/elicit {\"message\":\"Which size, and how many?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"string\",\"enum\":[\"s\",\"m\",\"l\"]},\"quantity\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10}},\"required\":[\"size\"]}}"}`)

var answerBody = []byte(`{"action":"accept","content":{"size":"m","quantity":2}}`)

// turnOp posts an echo turn on the worker's own thread.
func turnOp(c *client, ids []string) op {
	return func(ctx context.Context, worker, _ int) (time.Duration, error) {
		_, err := c.turn(ctx, ids[worker], turnBody, "completed")
		return 0, err
	}
}
