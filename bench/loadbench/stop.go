package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"chatd/internal/store"
)

// stopBody is a streamed turn that writes a word every 20 ms for four
// seconds unless it is stopped.
var stopBody = []byte(`{"message":"/slow 20 ` + strings.TrimSpace(strings.Repeat("w ", 200)) + `"}`)

// stopRequests bounds row 9's operations: each holds a turn open until it is
// stopped.
const stopRequests = 300

// measureStop is row 9: how soon a stop ends a streamed turn, from the stop
// request to the stream's turn.completed, asked of the instance running the
// turn (10a) and of another instance sharing its Redis (10b).
func (b *bench) measureStop(ctx context.Context) ([]row, error) {
	n := min(b.cfg.requests, stopRequests)
	runningC, ids, err := b.chatd(ctx, b.newRedisStore(store.Options{}), nil)
	if err != nil {
		return nil, err
	}
	otherC, _, err := b.chatd(ctx, b.newRedisStore(store.Options{}), nil)
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, r := range []struct {
		id, scenario string
		stopper      *client
	}{
		{"10a", "stop a streamed turn, Redis, same instance: stop request → turn.completed", runningC},
		{"10b", "stop a streamed turn, Redis, another instance: stop request → turn.completed", otherC},
	} {
		res, err := b.measured(ctx, n, func(ctx context.Context, worker, _ int) (time.Duration, error) {
			return runningC.stopLatency(ctx, ids[worker], r.stopper)
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{id: r.id, scenario: r.scenario, res: res, inner: true,
			ratio: ratio(float64(percentile(res.inner, 99)), float64(time.Millisecond)), ratioIs: "p99 in ms; goal ≤ 250"})
	}
	return rows, nil
}

// stopLatency streams a turn on c, has stopper stop it once its first delta
// arrives, and returns the time from the stop request to turn.completed,
// which must say the turn stopped.
func (c *client) stopLatency(ctx context.Context, threadID string, stopper *client) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/threads/"+threadID+"/turns", bytes.NewReader(stopBody))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("stream: status %d", resp.StatusCode)
	}
	var stopAt time.Time
	stopped := make(chan error, 1)
	event := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
			if event == "text.delta" && stopAt.IsZero() {
				stopAt = time.Now()
				go func() {
					stopped <- stopper.expect(ctx, http.MethodPost, "/v1/threads/"+threadID+"/cancel", nil, http.StatusAccepted, nil)
				}()
			}
			continue
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && event == "turn.completed" {
			took := time.Since(stopAt)
			if stopAt.IsZero() {
				return 0, fmt.Errorf("the turn completed before it streamed")
			}
			if err := <-stopped; err != nil {
				return 0, fmt.Errorf("stop: %w", err)
			}
			if !strings.Contains(data, `"status":"stopped"`) {
				return 0, fmt.Errorf("the turn was not stopped: %s", truncate([]byte(data), 200))
			}
			return took, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("the stream ended without turn.completed")
}
