package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// failoverWorkers is how many clients send turns during a failover test,
// each on a thread of its own.
const failoverWorkers = 6

// failoverSetup is a replicated Redis whose master of a given key a test
// can kill and bring back as a replica.
type failoverSetup struct {
	url string
	// master returns the node that is master of key now.
	master func(ctx context.Context, key string) (*redistest.Process, error)
	// rejoin brings a killed node back as a replica of the new master.
	rejoin func(ctx context.Context, p *redistest.Process) error
}

func newClusterFailover(t *testing.T) failoverSetup {
	c, err := redistest.LaunchCluster(t.Context(), redistest.ClusterOptions{Bin: mustRedisServer(t), NodeTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	return failoverSetup{
		url:    c.URL(),
		master: c.MasterOf,
		rejoin: func(ctx context.Context, p *redistest.Process) error {
			// A restarted node keeps its identity (nodes.conf) and, its
			// slots now served by the promoted replica, becomes its replica.
			if err := p.Restart(ctx); err != nil {
				return err
			}
			return c.WaitHealthy(ctx)
		},
	}
}

func newSentinelFailover(t *testing.T) failoverSetup {
	s, err := redistest.LaunchSentinel(t.Context(), redistest.SentinelOptions{Bin: mustRedisServer(t), DownAfter: time.Second})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	return failoverSetup{
		url:    s.URL(),
		master: func(ctx context.Context, _ string) (*redistest.Process, error) { return s.Master(ctx) },
		rejoin: s.Rejoin,
	}
}

// failoverFigures is what one failover run measured, for
// docs/reliability.md.
type failoverFigures struct {
	acknowledged, lost       int
	unavailable, busy        int
	firstUnavailable         time.Duration // after the kill
	lastUnavailable          time.Duration
	promoted, rejoined       time.Duration // the replica took over; the old master is back as its replica
	recovered                time.Duration // first acknowledged turn on the killed master's thread
	unexpected               []string
	unavailableBeforeTheKill int
}

func (f failoverFigures) String() string {
	return fmt.Sprintf("acknowledged turns %d, lost %d; 503s %d (from +%s to +%s after the kill), 409s %d; "+
		"replica promoted +%s, old master back as replica +%s, first acknowledged turn on the busy thread +%s",
		f.acknowledged, f.lost, f.unavailable, f.firstUnavailable.Round(time.Millisecond), f.lastUnavailable.Round(time.Millisecond),
		f.busy, f.promoted.Round(time.Millisecond), f.rejoined.Round(time.Millisecond), f.recovered.Round(time.Millisecond))
}

// TestFailover kills the master of a busy thread's slot while clients send
// turns, on a Cluster of three masters with a replica each and on
// a Sentinel set-up. With CHATD_REDIS_WAIT_REPLICAS=1 no acknowledged turn
// is lost; meanwhile turns answer 503 (or 409 while a lock taken before the
// failover lasts), never 500 or 502, and they continue once the replica has
// taken over and the old master is back as its replica.
//
// CHATD_FAILOVER_FIGURES=1 also runs without WAIT, to show what it
// prevents; those runs only report.
func TestFailover(t *testing.T) {
	setups := []struct {
		name string
		new  func(t *testing.T) failoverSetup
	}{
		{"cluster", newClusterFailover},
		{"sentinel", newSentinelFailover},
	}
	waits := []int{1}
	if os.Getenv("CHATD_FAILOVER_FIGURES") == "1" {
		waits = append(waits, 0)
	}
	for _, setup := range setups {
		for _, wait := range waits {
			t.Run(fmt.Sprintf("%s/wait%d", setup.name, wait), func(t *testing.T) {
				f := runFailover(t, setup.new(t), wait)
				t.Logf("%s WAIT %d: %s", setup.name, wait, f)
				assert.Empty(t, f.unexpected, "answers other than 200, 409 and 503")
				assert.Zero(t, f.unavailableBeforeTheKill, "503s before the kill")
				if wait > 0 {
					assert.Zero(t, f.lost, "acknowledged turns lost with WAIT %d", wait)
				}
			})
		}
	}
}

// failoverTurn is one turn a worker sent.
type failoverTurn struct {
	worker int
	text   string
	status int
	code   string
	at     time.Time
}

func runFailover(t *testing.T, setup failoverSetup, wait int) (f failoverFigures) {
	// Fail fast while a node is gone; WAIT must answer within the read
	// timeout.
	q := url.Values{"dial_timeout": {"250ms"}, "read_timeout": {"2s"}, "write_timeout": {"2s"}, "pool_timeout": {"2s"}}
	sep := "?"
	if strings.Contains(setup.url, "?") {
		sep = "&"
	}
	opts := testStoreOpts
	opts.HistoryMax = 100_000
	opts.WaitReplicas = wait
	opts.WaitTimeout = 500 * time.Millisecond
	st, err := store.OpenRedis(setup.url+sep+q.Encode(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	// A lock left behind by a turn cut off mid-way keeps its thread busy
	// until its lease lapses: keep the lease short.
	// The server's errors say why an answer was unexpected.
	var errLog lockedBuffer
	ts := newTestServer(t, withStore(st), withTurnConfig(func(c *turn.Config) {
		c.TurnTimeout = 3 * time.Second
		c.LockLease = 2 * time.Second
	}), withDeps(func(d *api.Deps) {
		d.Logger = slog.New(slog.NewTextHandler(&errLog, &slog.HandlerOptions{Level: slog.LevelError}))
	}))
	defer func() {
		if len(f.unexpected) > 0 {
			t.Logf("the server's errors:\n%s", errLog.String())
		}
	}()

	threads := make([]string, failoverWorkers)
	for i := range threads {
		threads[i] = ts.mustCreateThread(t, alice, "echo")
	}
	victim, err := setup.master(t.Context(), "chatd:{"+threads[0]+"}:thread")
	require.NoError(t, err)

	var (
		mu    sync.Mutex
		turns []failoverTurn
		// acked counts each worker's acknowledged turns.
		acked = make([]int, failoverWorkers)
	)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	client := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for w := range failoverWorkers {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				text := fmt.Sprintf("w%d-%d", w, n)
				status, code := postFailoverTurn(ctx, client, ts.URL, threads[w], text)
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				turns = append(turns, failoverTurn{worker: w, text: text, status: status, code: code, at: time.Now()})
				if status == http.StatusOK {
					acked[w]++
				}
				mu.Unlock()
				if status != http.StatusOK {
					time.Sleep(20 * time.Millisecond) // as a client would back off
				}
			}
		})
	}
	ackedBy := func(w int) int {
		mu.Lock()
		defer mu.Unlock()
		return acked[w]
	}
	waitFor(t, "turns before the kill", func() bool { return ackedBy(0) >= 20 })

	killed := time.Now()
	victim.Kill()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m, err := setup.master(t.Context(), "chatd:{"+threads[0]+"}:thread")
		require.NoError(c, err)
		assert.NotEqual(c, victim.Addr(), m.Addr())
	}, 60*time.Second, 20*time.Millisecond, "the replica takes over")
	f.promoted = time.Since(killed)
	require.NoError(t, setup.rejoin(t.Context(), victim))
	f.rejoined = time.Since(killed)
	// Turns go on: every worker, the busy thread's among them, gets 20
	// more acknowledged.
	after := make([]int, failoverWorkers)
	for w := range after {
		after[w] = ackedBy(w)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for w := range after {
			assert.GreaterOrEqual(c, ackedBy(w), after[w]+20, "worker %d", w)
		}
	}, 60*time.Second, 20*time.Millisecond, "turns continue after the failover")
	stop()
	wg.Wait()

	// The busy thread has recovered at its first acknowledged turn after
	// its first failed one after the kill (turns in flight at the kill may
	// still be acknowledged first).
	failedAfterKill := false
	for _, tr := range turns {
		if tr.worker == 0 && tr.at.After(killed) {
			if tr.status != http.StatusOK {
				failedAfterKill = true
			} else if failedAfterKill && f.recovered == 0 {
				f.recovered = tr.at.Sub(killed)
			}
		}
		switch {
		case tr.status == http.StatusOK:
			f.acknowledged++
		case tr.status == http.StatusServiceUnavailable && tr.code == "store_unavailable":
			if tr.at.Before(killed) {
				f.unavailableBeforeTheKill++
				continue
			}
			f.unavailable++
			since := tr.at.Sub(killed)
			if f.firstUnavailable == 0 {
				f.firstUnavailable = since
			}
			f.lastUnavailable = max(f.lastUnavailable, since)
		case tr.status == http.StatusConflict && tr.code == "thread_busy":
			f.busy++
		default:
			f.unexpected = append(f.unexpected, fmt.Sprintf("%s: %d %s", tr.text, tr.status, tr.code))
		}
	}
	// Every acknowledged turn's message must be in its thread's history.
	for w, th := range threads {
		kept := map[string]bool{}
		for _, m := range mustHistoryAll(t, client, ts.URL, th) {
			kept[m] = true
		}
		for _, tr := range turns {
			if tr.worker == w && tr.status == http.StatusOK && !kept[tr.text] {
				f.lost++
			}
		}
	}
	return f
}

// postFailoverTurn sends one turn and returns its status and problem code;
// a transport error counts as status 0.
func postFailoverTurn(ctx context.Context, client *http.Client, base, threadID, text string) (int, string) {
	body, _ := json.Marshal(map[string]string{"message": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+turnPath(threadID), bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(principalHeader, alice)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var p struct {
		Code string `json:"code"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&p)
	return resp.StatusCode, p.Code
}

// mustHistoryAll reads a thread's whole history, page by page, and returns
// the messages' texts, retrying a page that meets a store still settling.
func mustHistoryAll(t *testing.T, client *http.Client, base, threadID string) []string {
	t.Helper()
	var texts []string
	before := ""
	for {
		path := base + "/v1/threads/" + threadID + "/messages?limit=200"
		if before != "" {
			path += "&before=" + before
		}
		var page wirePage
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			req, err := http.NewRequest(http.MethodGet, path, nil)
			require.NoError(c, err)
			req.Header.Set(principalHeader, alice)
			resp, err := client.Do(req)
			require.NoError(c, err)
			defer resp.Body.Close()
			require.Equal(c, http.StatusOK, resp.StatusCode)
			require.NoError(c, json.NewDecoder(resp.Body).Decode(&page))
		}, waitTimeout, 50*time.Millisecond, "history of %s", threadID)
		for _, m := range page.Messages {
			texts = append(texts, m.Message)
		}
		if page.NextBefore == nil {
			return texts
		}
		before = *page.NextBefore
	}
}

// gateProcessor answers once its gate opens, so a test can act while the
// turn runs.
type gateProcessor struct {
	started chan<- struct{}
	gate    <-chan struct{}
}

func (g gateProcessor) Describe() string { return "answers when its gate opens" }

func (g gateProcessor) Process(ctx context.Context, in processor.Input, _ processor.Emit) (processor.Output, error) {
	g.started <- struct{}{}
	select {
	case <-g.gate:
		return processor.Output{Text: "done"}, nil
	case <-ctx.Done():
		return processor.Output{}, ctx.Err()
	}
}

// TestTurnThatLosesItsLockAnswers503: a failover can promote a replica that
// never got a running turn's lock. The commit is then refused — nothing is
// written — and the client gets 503 store_unavailable (retry), never 502
// processor_failed: the processor did its job.
func TestTurnThatLosesItsLockAnswers503(t *testing.T) {
	srv := redistest.Start(t)
	started, gate := make(chan struct{}, 1), make(chan struct{})
	ts := newTestServer(t, withStore(newTestRedisStore(t, srv)), withProcessor("gate", gateProcessor{started: started, gate: gate}))
	thread := ts.mustCreateThread(t, alice, "gate")

	type answer struct {
		status int
		code   string
	}
	done := make(chan answer, 1)
	go func() {
		status, code := postFailoverTurn(t.Context(), http.DefaultClient, ts.URL, thread, "hello")
		done <- answer{status, code}
	}()
	<-started
	// What a failover to a replica that missed the lock leaves behind.
	n, err := srv.Do(t.Context(), "DEL", "chatd:{"+thread+"}:lock")
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the running turn held the lock")
	close(gate)

	got := <-done
	assert.Equal(t, http.StatusServiceUnavailable, got.status)
	assert.Equal(t, "store_unavailable", got.code)
	assert.Empty(t, ts.mustHistory(t, alice, thread), "nothing was written")
	ts.mustTurn(t, alice, thread, "again") // the thread is free
}

// lockedBuffer is a buffer several goroutines write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
