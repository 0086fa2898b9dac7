package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"chatd/internal/store"
)

// unlogged is a Redis store that keeps no turn event logs: the baseline
// that row 8a's logged streamed turns are measured against.
type unlogged struct{ *store.Redis }

func (u unlogged) BeginTurn(ctx context.Context, b store.BeginTurn) (store.TurnStart, error) {
	b.Turn = store.TurnBegin{}
	return u.Redis.BeginTurn(ctx, b)
}

func (u unlogged) CommitTurn(ctx context.Context, c store.Commit) error {
	c.TurnID, c.Start, c.Events = "", store.TurnEvent{}, nil
	return u.Redis.CommitTurn(ctx, c)
}

func (u unlogged) AppendTurnEvents(context.Context, string, string, []store.TurnEvent) error {
	return nil
}

// measureTurnLog measures row 8: what logging a streamed turn's events for
// reattachment costs (8a with the log against 8b without, interleaved), and
// how soon a reattach on another instance gets a turn's first event (8c).
func (b *bench) measureTurnLog(ctx context.Context) ([]row, error) {
	n := b.cfg.requests
	loggedC, loggedThreads, err := b.chatd(ctx, b.newRedisStore(store.Options{}), nil)
	if err != nil {
		return nil, err
	}
	bareC, bareThreads, err := b.chatd(ctx, unlogged{b.newRedisStore(store.Options{})}, nil)
	if err != nil {
		return nil, err
	}
	res, err := b.compare(ctx, n,
		func(ctx context.Context, worker, _ int) (time.Duration, error) {
			return loggedC.streamTurn(ctx, loggedThreads[worker], streamBody)
		},
		func(ctx context.Context, worker, _ int) (time.Duration, error) {
			return bareC.streamTurn(ctx, bareThreads[worker], streamBody)
		})
	if err != nil {
		return nil, err
	}
	for id, c := range map[string]struct {
		client  *client
		threads []string
	}{"8a": {loggedC, loggedThreads}, "8b": {bareC, bareThreads}} {
		err := b.maybeProfile(ctx, id, func(ctx context.Context, worker, _ int) (time.Duration, error) {
			return c.client.streamTurn(ctx, c.threads[worker], streamBody)
		})
		if err != nil {
			return nil, err
		}
	}

	// 8c: turns run on one instance, reattached on another sharing Redis.
	otherC, _, err := b.chatd(ctx, b.newRedisStore(store.Options{}), nil)
	if err != nil {
		return nil, err
	}
	type turnRef struct{ thread, turn string }
	refs := make([]turnRef, 0, b.cfg.concurrency)
	for _, id := range loggedThreads {
		ans, err := loggedC.turn(ctx, id, []byte(`{"message":"hello"}`), "completed")
		if err != nil {
			return nil, err
		}
		refs = append(refs, turnRef{id, ans.TurnID})
	}
	r8c, err := b.measured(ctx, n, func(ctx context.Context, worker, _ int) (time.Duration, error) {
		return otherC.firstEvent(ctx, refs[worker].thread, refs[worker].turn)
	})
	if err != nil {
		return nil, err
	}
	return []row{
		{id: "8a", scenario: "streamed turn (20 deltas), Redis, events logged for reattachment", res: res[0],
			ratio: ratio(res[0].throughput(), res[1].throughput()), ratioIs: "req/s ÷ 8b; goal ≥ 0.9"},
		{id: "8b", scenario: "streamed turn (20 deltas), Redis, no event log", res: res[1], ratio: 1, ratioIs: "baseline"},
		{id: "8c", scenario: "reattach on another instance: request → first replayed event", res: r8c, inner: true,
			ratio: ratio(float64(percentile(r8c.inner, 50)), float64(time.Millisecond)), ratioIs: "p50 in ms"},
	}, nil
}

// firstEvent reattaches to a turn's events and returns the time to the
// first event; the call returns once the stream has ended.
func (c *client) firstEvent(ctx context.Context, threadID, turnID string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/threads/"+threadID+"/turns/"+turnID+"/events", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("reattach: status %d", resp.StatusCode)
	}
	var first time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: ") && first == 0 {
			first = time.Since(start)
		}
	}
	if first == 0 {
		return 0, fmt.Errorf("reattach: no event")
	}
	return first, sc.Err()
}
