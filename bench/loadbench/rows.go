package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"chatd/internal/api"
	"chatd/internal/blocks"
	"chatd/internal/ratelimit"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// row is one line of the table.
type row struct {
	id       string
	scenario string
	res      loadResult
	// inner reports the latency measured inside each operation (time to
	// first delta) instead of the whole operation's.
	inner   bool
	ratio   float64
	ratioIs string
}

func (r row) p50() time.Duration {
	if r.inner {
		return percentile(r.res.inner, 50)
	}
	return percentile(r.res.latency, 50)
}

func (r row) p99() time.Duration {
	if r.inner {
		return percentile(r.res.inner, 99)
	}
	return percentile(r.res.latency, 99)
}

// ratio divides two measurements, 0 when the divisor is.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// measure runs every row, in an order that keeps the rows compared with
// each other in the same rounds.
func (b *bench) measure(ctx context.Context) ([]row, error) {
	if b.cfg.streamsOnly {
		return b.measureLongStreams(ctx)
	}
	turns, err := b.measureTurns(ctx)
	if err != nil {
		return nil, err
	}
	rows := turns.rows()
	if b.cfg.turnsOnly {
		return rows, nil
	}
	more := []struct {
		what    string
		measure func(context.Context) ([]row, error)
	}{
		// 7: the same turn on a Cluster, interleaved with row 2's.
		{"row 7", func(ctx context.Context) ([]row, error) { return b.measureCluster(ctx, b.cfg.requests, turns.redisOp) }},
		{"row 4", func(ctx context.Context) ([]row, error) { return b.measureElicitation(ctx, turns) }},
		{"row 6", func(ctx context.Context) ([]row, error) { return b.measureStreams(ctx, turns) }},
		{"row 8", b.measureTurnLog},
		{"row 9", b.measureLongStreams},
		{"row 10", b.measureStop},
		{"row 5", b.measureGrowth},
	}
	byWhat := map[string][]row{}
	for _, m := range more {
		r, err := m.measure(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.what, err)
		}
		byWhat[m.what] = r
	}
	for _, what := range []string{"row 4", "row 5", "row 6", "row 7", "row 8", "row 9", "row 10"} {
		rows = append(rows, byWhat[what]...)
	}
	return rows, nil
}

// turnRows are rows 1–3's results, and what later rows compare with.
type turnRows struct {
	r1, r2, r3, r2r, r2p loadResult
	redis                *client
	redisOp              op
}

func (t turnRows) rows() []row {
	return []row{
		{id: "1", scenario: "echo turn, embedded store", res: t.r1,
			ratio: ratio(t.r1.throughput(), t.r3.throughput()), ratioIs: "req/s ÷ floor (3)"},
		{id: "2", scenario: "echo turn, Redis", res: t.r2,
			ratio: ratio(t.r2.throughput(), t.r3.throughput()), ratioIs: "req/s ÷ floor (3); goal ≥ 0.5"},
		{id: "2r", scenario: "echo turn, Redis, rate limit on (chatd's limiter, counts shared on Redis)", res: t.r2r,
			ratio: ratio(t.r2r.throughput(), t.r3.throughput()), ratioIs: "req/s ÷ floor (3); goal ≥ 0.6"},
		{id: "2p", scenario: "echo turn, Redis, a Redis round trip per request to count it (what a per-request Redis counter costs)", res: t.r2p,
			ratio: ratio(t.r2p.throughput(), t.r3.throughput()), ratioIs: "req/s ÷ floor (3)"},
		{id: "3", scenario: "floor: decode + one Redis MULTI of a commit's writes", res: t.r3,
			ratio: 1, ratioIs: "baseline"},
	}
}

// measureTurns is rows 1–3, measured interleaved: 1, an echo turn on the
// embedded store; 2, on Redis; 2r, with chatd's rate limiter on, counting
// on Redis; 2p, behind a counter that costs a Redis round trip per request;
// 3, the floor, on the same redis-server.
func (b *bench) measureTurns(ctx context.Context) (turnRows, error) {
	var t turnRows
	memC, memThreads, err := b.chatd(ctx, store.NewMemory(store.Options{}), nil)
	if err != nil {
		return t, fmt.Errorf("row 1: %w", err)
	}
	redisC, redisThreads, err := b.chatd(ctx, b.newRedisStore(store.Options{}), nil)
	if err != nil {
		return t, fmt.Errorf("row 2: %w", err)
	}
	fl := &floor{rdb: b.rdb, ttl: store.DefaultOptions.ThreadTTL}
	floorC, err := b.serve(fl.routes())
	if err != nil {
		return t, err
	}
	floorThreads := make([]string, b.cfg.concurrency)
	for i := range floorThreads {
		floorThreads[i] = blocks.NewID()
	}
	limitedStore := b.newRedisStore(store.Options{})
	limitedC, limitedThreads, err := b.chatd(ctx, limitedStore, func(d *api.Deps) {
		d.RateLimit = ratelimit.New(ratelimit.Rate{N: benchRate, Per: time.Minute}, limitedStore.RateCounter(), nil)
	})
	if err != nil {
		return t, fmt.Errorf("row 2r: %w", err)
	}
	perRequestC, perRequestThreads, err := b.chatdBehind(ctx, b.newRedisStore(store.Options{}), func(h http.Handler) http.Handler {
		return perRequestCounter(b.rdb, benchRate, time.Minute, h)
	}, nil)
	if err != nil {
		return t, fmt.Errorf("row 2p: %w", err)
	}
	ops := map[string]op{
		"1": turnOp(memC, memThreads), "2": turnOp(redisC, redisThreads), "3": turnOp(floorC, floorThreads),
		"2r": turnOp(limitedC, limitedThreads), "2p": turnOp(perRequestC, perRequestThreads),
	}
	res, err := b.compare(ctx, b.cfg.requests, ops["1"], ops["2"], ops["3"], ops["2r"], ops["2p"])
	if err != nil {
		return t, fmt.Errorf("rows 1–3: %w", err)
	}
	t = turnRows{r1: res[0], r2: res[1], r3: res[2], r2r: res[3], r2p: res[4], redis: redisC, redisOp: ops["2"]}
	for _, id := range []string{"1", "2", "3", "2r"} {
		if err := b.maybeProfile(ctx, id, ops[id]); err != nil {
			return t, err
		}
	}
	return t, nil
}

// measureElicitation is row 4: elicitation round trips on Redis, each on
// the worker's own thread.
func (b *bench) measureElicitation(ctx context.Context, turns turnRows) ([]row, error) {
	ids, err := threads(ctx, turns.redis, b.cfg.concurrency)
	if err != nil {
		return nil, err
	}
	r4, err := b.measured(ctx, b.cfg.requests/2, elicitOp(turns.redis, ids))
	if err != nil {
		return nil, err
	}
	if err := b.maybeProfile(ctx, "4", elicitOp(turns.redis, ids)); err != nil {
		return nil, err
	}
	return []row{{id: "4", scenario: "elicitation round trip (pause turn + answer → resumed reply), Redis", res: r4,
		ratio: ratio(r4.throughput(), turns.r2.throughput()), ratioIs: "round trips/s ÷ turns/s of 2"}}, nil
}

// measureStreams is row 6: streamed turns on Redis, natively and over the
// frontend protocols, measured interleaved. Each protocol's workers have
// threads of their own.
func (b *bench) measureStreams(ctx context.Context, turns turnRows) ([]row, error) {
	c := turns.redis
	var ids [3][]string
	for i := range ids {
		var err error
		if ids[i], err = threads(ctx, c, b.cfg.concurrency); err != nil {
			return nil, err
		}
	}
	streamOp := func(ctx context.Context, worker, _ int) (time.Duration, error) {
		return c.streamTurn(ctx, ids[0][worker], streamBody)
	}
	aiSDKBodies, aguiBodies := make([][]byte, b.cfg.concurrency), make([][]byte, b.cfg.concurrency)
	for w := range b.cfg.concurrency {
		aiSDKBodies[w], aguiBodies[w] = aiSDKBody(ids[1][w]), aguiBody(ids[2][w])
	}
	aiSDKOp := func(ctx context.Context, worker, _ int) (time.Duration, error) {
		return c.protocolTurn(ctx, aiSDKStream, aiSDKBodies[worker])
	}
	aguiOp := func(ctx context.Context, worker, _ int) (time.Duration, error) {
		return c.protocolTurn(ctx, aguiStream, aguiBodies[worker])
	}
	res, err := b.compare(ctx, b.cfg.requests, streamOp, aiSDKOp, aguiOp)
	if err != nil {
		return nil, err
	}
	r6, r6c, r6d := res[0], res[1], res[2]
	for id, fn := range map[string]op{"6": streamOp, "6c": aiSDKOp, "6d": aguiOp} {
		if err := b.maybeProfile(ctx, id, fn); err != nil {
			return nil, err
		}
	}
	return []row{
		{id: "6a", scenario: "streamed turn (20 deltas), Redis: time to first delta", res: r6, inner: true,
			ratio: ratio(float64(percentile(r6.inner, 50)), float64(percentile(r6.latency, 50))), ratioIs: "p50 ÷ p50 of 6b"},
		{id: "6b", scenario: "streamed turn (20 deltas), Redis: full reply", res: r6,
			ratio: ratio(r6.throughput(), turns.r2.throughput()), ratioIs: "req/s ÷ JSON turn (2)"},
		{id: "6c", scenario: "the same turn over the AI SDK UI message stream (POST /v1/ai-sdk/chat)", res: r6c,
			ratio: ratio(r6c.throughput(), r6.throughput()), ratioIs: "req/s ÷ native SSE (6b); goal ≥ 0.9"},
		{id: "6d", scenario: "the same turn over AG-UI (POST /v1/ag-ui)", res: r6d,
			ratio: ratio(r6d.throughput(), r6.throughput()), ratioIs: "req/s ÷ native SSE (6b); goal ≥ 0.9"},
	}, nil
}

// measureCluster is row 7: echo turns on a Redis Cluster of three masters
// with a replica each (all on this machine), with CHATD_REDIS_WAIT_REPLICAS
// 0 and 1, measured interleaved with single, the one-node turn of row 2,
// whose throughput in the same rounds is their baseline.
func (b *bench) measureCluster(ctx context.Context, n int, single op) ([]row, error) {
	c, err := redistest.LaunchCluster(ctx, redistest.ClusterOptions{Bin: b.bin})
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, c.Stop)
	url := fmt.Sprintf("%s?pool_size=%d", c.URL(), 2*b.cfg.concurrency+4)
	var ops []op
	for _, wait := range []int{0, 1} {
		st, err := store.OpenRedis(url, store.Options{WaitReplicas: wait})
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, func() { _ = st.Close() })
		h, err := newChatd(st, turn.DefaultConfig, b.cfg.readHistory)
		if err != nil {
			return nil, err
		}
		cl, err := b.serve(h)
		if err != nil {
			return nil, err
		}
		ids, err := threads(ctx, cl, b.cfg.concurrency)
		if err != nil {
			return nil, err
		}
		ops = append(ops, turnOp(cl, ids))
	}
	res, err := b.compare(ctx, n, single, ops[0], ops[1])
	if err != nil {
		return nil, err
	}
	base := res[0].throughput()
	return []row{
		{id: "7a", scenario: "echo turn, Redis Cluster (3 masters × 1 replica, same machine)", res: res[1],
			ratio: ratio(res[1].throughput(), base), ratioIs: "req/s ÷ one node (2), interleaved"},
		{id: "7b", scenario: "echo turn, Redis Cluster, CHATD_REDIS_WAIT_REPLICAS=1", res: res[2],
			ratio: ratio(res[2].throughput(), res[1].throughput()), ratioIs: "req/s ÷ 7a: what WAIT 1 costs"},
	}, nil
}

// elicitOp runs one elicitation round trip: a turn that pauses, then the
// answer that resumes it.
func elicitOp(c *client, ids []string) op {
	return func(ctx context.Context, worker, _ int) (time.Duration, error) {
		id := ids[worker]
		ans, err := c.turn(ctx, id, elicitBody, "input_required")
		if err != nil {
			return 0, err
		}
		if ans.Elicitation == nil {
			return 0, errors.New("paused turn without an elicitation")
		}
		eid, _ := ans.Elicitation.Meta[blocks.MetaElicitationID].(string)
		if eid == "" {
			return 0, errors.New("elicitation without an ID")
		}
		var done turnAnswer
		if err := c.expect(ctx, http.MethodPost, "/v1/threads/"+id+"/elicitations/"+eid, answerBody, http.StatusOK, &done); err != nil {
			return 0, err
		}
		if done.Status != "completed" {
			return 0, fmt.Errorf("resumed turn status %q, want completed", done.Status)
		}
		return 0, nil
	}
}

// growthWindow is the history window of row 5's server, whose echo reads
// it, and the page size of its history requests: both threads then hand the
// same number of messages to the turn and the page, so the ratio shows only
// what the thread's length costs.
const growthWindow = 10

// measureGrowth is row 5: turns and history pages on threads of 10 messages
// against threads of cfg.bigThread messages. Every short-thread turn gets a
// thread of its own, so each sees exactly 10 messages; the long threads (one
// per worker, since turns on a thread serialize) grow by a few percent. The
// history pages read the same threads after their turns.
func (b *bench) measureGrowth(ctx context.Context) ([]row, error) {
	n, conc := b.cfg.requests, b.cfg.concurrency
	// History is never trimmed here: trimming would add work to the long
	// threads' turns that a short thread never does.
	st := b.newRedisStore(store.Options{HistoryMax: b.cfg.bigThread + 2*(n+b.cfg.warmup) + 100})
	cfg := turn.DefaultConfig
	cfg.HistoryWindow = growthWindow
	h, err := newChatd(st, cfg, true)
	if err != nil {
		return nil, err
	}
	c, err := b.serve(h)
	if err != nil {
		return nil, err
	}

	short := make([]string, b.cfg.warmup+n)
	long := make([]string, conc)
	longJSON := make([]int, conc)
	if err := b.seedThreads(ctx, st, short, growthWindow, nil); err != nil {
		return nil, err
	}
	if err := b.seedThreads(ctx, st, long, b.cfg.bigThread, longJSON); err != nil {
		return nil, err
	}
	b.memoryLine, err = b.memoryPerMessage(ctx, long[0], b.cfg.bigThread, longJSON[0])
	if err != nil {
		return nil, err
	}

	// Every short-thread turn takes the next unused short thread.
	var nextShort atomic.Int64
	shortTurn := func(ctx context.Context, _, _ int) (time.Duration, error) {
		i := int(nextShort.Add(1)) - 1
		if i >= len(short) {
			return 0, errors.New("out of short threads")
		}
		_, err := c.turn(ctx, short[i], turnBody, "completed")
		return 0, err
	}
	turns, err := b.compare(ctx, n, shortTurn, turnOp(c, long))
	if err != nil {
		return nil, err
	}
	page := func(ids []string) op {
		return func(ctx context.Context, worker, seq int) (time.Duration, error) {
			return 0, historyPage(ctx, c, ids[seq%len(ids)], growthWindow)
		}
	}
	pages, err := b.compare(ctx, n, page(short), page(long))
	if err != nil {
		return nil, err
	}
	r5a, r5b, r5c, r5d := turns[0], turns[1], pages[0], pages[1]
	big := fmt.Sprintf("%d", b.cfg.bigThread)
	return []row{
		{id: "5a", scenario: "echo turn on a 10-message thread, Redis", res: r5a, ratio: 1, ratioIs: "baseline"},
		{id: "5b", scenario: "echo turn on a " + big + "-message thread, Redis", res: r5b,
			ratio: ratio(r5a.throughput(), r5b.throughput()), ratioIs: "cost ÷ 5a (req/s of 5a ÷ req/s); goal ≤ 1.2"},
		{id: "5c", scenario: "history page (10) of a 10-message thread, Redis", res: r5c, ratio: 1, ratioIs: "baseline"},
		{id: "5d", scenario: "history page (10) of a " + big + "-message thread, Redis", res: r5d,
			ratio: ratio(r5c.throughput(), r5d.throughput()), ratioIs: "cost ÷ 5c (req/s of 5c ÷ req/s); goal ≤ 1.2"},
	}, nil
}

// seedThreads fills ids with new threads of size messages each, written
// straight through the store; jsonSizes, when given, gets each thread's
// bytes of message JSON.
func (b *bench) seedThreads(ctx context.Context, st api.Store, ids []string, size int, jsonSizes []int) error {
	const seedLimit = 2 * time.Minute
	res := runLoad(ctx, loadSpec{requests: len(ids), concurrency: b.cfg.concurrency, limit: seedLimit},
		func(ctx context.Context, _, seq int) (time.Duration, error) {
			ids[seq] = blocks.NewID()
			n, err := seedThread(ctx, st, ids[seq], size, b.cfg.seedBatch)
			if jsonSizes != nil {
				jsonSizes[seq] = n
			}
			return 0, err
		})
	if res.errors > 0 {
		return fmt.Errorf("seeding: %d threads failed; first: %w", res.errors, res.firstErr)
	}
	if res.done != len(ids) {
		return fmt.Errorf("seeding: only %d of %d threads within %s", res.done, len(ids), seedLimit)
	}
	return ctx.Err()
}

// historyPage gets the newest page of limit messages and checks its size.
func historyPage(ctx context.Context, c *client, threadID string, limit int) error {
	var page struct {
		Messages []json.RawMessage `json:"messages"`
	}
	path := fmt.Sprintf("/v1/threads/%s/messages?limit=%d", threadID, limit)
	if err := c.expect(ctx, http.MethodGet, path, nil, http.StatusOK, &page); err != nil {
		return err
	}
	if len(page.Messages) != limit {
		return fmt.Errorf("history page of %d messages, want %d", len(page.Messages), limit)
	}
	return nil
}

// seedThread creates a thread holding n alternating user and assistant
// messages, committed straight through the store in batches (each under
// the turn lock, as a turn would), and returns the size of their JSON as
// stored and read back, parent_id included.
func seedThread(ctx context.Context, st api.Store, id string, n, batch int) (int, error) {
	if err := st.CreateThread(ctx, store.Thread{ID: id, Owner: api.AnonymousPrincipal, Processor: "echo"}); err != nil {
		return 0, err
	}
	size, prev := 0, ""
	for done := 0; done < n; {
		k := min(batch, n-done)
		start, err := st.BeginTurn(ctx, store.BeginTurn{ThreadID: id, Principal: api.AnonymousPrincipal, LockTTL: time.Minute})
		if err != nil {
			return 0, err
		}
		msgs := make([]blocks.Message, k)
		for i := range msgs {
			role := blocks.RoleUser
			if (done+i)%2 == 1 {
				role = blocks.RoleAssistant
			}
			msgs[i] = blocks.NewMessage(role, turnText, nil, nil)
			// The store keeps each message with its parent (the one
			// before it on this one branch), and so does its JSON.
			msgs[i].ParentID, prev = prev, msgs[i].ID
			enc, err := json.Marshal(msgs[i])
			if err != nil {
				return 0, err
			}
			size += len(enc)
		}
		if err := st.CommitTurn(ctx, store.Commit{ThreadID: id, LockToken: start.LockToken, Messages: msgs}); err != nil {
			return 0, err
		}
		done += k
	}
	return size, nil
}

// memoryGoal is the goal for Redis memory per stored message, as a
// multiple of its JSON.
const memoryGoal = 1.3

// memoryPerMessage reports what Redis spends on a thread: MEMORY USAGE of
// its lasting keys (the thread record and its history; not short-lived ones
// such as the lock, turn events or idempotency records) per message,
// against the messages' JSON size.
func (b *bench) memoryPerMessage(ctx context.Context, threadID string, messages, jsonBytes int) (string, error) {
	keys := []string{"chatd:{" + threadID + "}:thread", "chatd:{" + threadID + "}:history"}
	total := int64(0)
	// The tree of a thread with branches is lasting too; a thread with
	// none has no tree key.
	tree, err := b.rdb.MemoryUsage(ctx, "chatd:{"+threadID+"}:tree", 0).Result()
	if err == nil {
		total += tree
	}
	for _, k := range keys {
		// SAMPLES 0 measures every element, not an estimate.
		used, err := b.rdb.MemoryUsage(ctx, k, 0).Result()
		if err != nil {
			return "", fmt.Errorf("MEMORY USAGE %s: %w", k, err)
		}
		if used == 0 {
			return "", fmt.Errorf("MEMORY USAGE %s: key missing (has the store's key layout changed?)", k)
		}
		total += used
	}
	perMsg := float64(total) / float64(messages)
	perJSON := float64(jsonBytes) / float64(messages)
	got := ratio(perMsg, perJSON)
	verdict := "met"
	if got > memoryGoal {
		verdict = "NOT met"
	}
	return fmt.Sprintf("Redis memory per stored message (MEMORY USAGE of the thread record + history of a %d-message thread): "+
		"%.0f bytes per message for %.0f bytes of message JSON (%.2f× the JSON; goal ≤ %.1f×: %s)",
		messages, perMsg, perJSON, got, memoryGoal, verdict), nil
}
