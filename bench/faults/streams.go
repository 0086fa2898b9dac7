package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"chatd/internal/redistest"
)

// reattachFlood: one principal holds 190 reattach streams of its running
// turn (CHATD_MAX_STREAMS raised to 200) on an instance whose Redis pool
// is small, while another principal's turns and thread lists are timed,
// idle and again during the flood.
func reattachFlood(ctx context.Context, cfg config, bin string) ([]row, error) {
	const followers = 190
	rds, err := redistest.Launch(ctx, redistest.Options{})
	if err != nil {
		return nil, err
	}
	defer rds.Stop()
	in, err := startChatd(ctx, bin, "CHATD_REDIS_URL=redis://"+rds.Addr()+"/0?pool_size=8", "CHATD_MAX_STREAMS=200",
		"CHATD_RATE_LIMIT=0", "CHATD_LOCK_LEASE="+cfg.lease.String())
	if err != nil {
		return nil, err
	}
	defer in.stop()

	// The other principal's work: a turn that outlives a third of the
	// lease (so it renews), then a list.
	measure := func(principal string, n int) ([]time.Duration, int, error) {
		var th struct{ ID string }
		if code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", principal, "", &th); err != nil || code != http.StatusCreated {
			return nil, 0, fmt.Errorf("create thread: %d %v", code, err)
		}
		slow := strconv.Itoa(int(cfg.lease / 3 / time.Millisecond / 4))
		var out []time.Duration
		failed := 0
		for range n {
			t := time.Now()
			code, err := call(ctx, http.MethodPost, in.base+"/v1/threads/"+th.ID+"/turns", principal, `{"message":"/slow `+slow+` a b c d e"}`, nil)
			if err != nil {
				return nil, 0, err
			}
			lcode, err := call(ctx, http.MethodGet, in.base+"/v1/threads", principal, "", nil)
			if err != nil {
				return nil, 0, err
			}
			if code != http.StatusOK || lcode != http.StatusOK {
				failed++
			}
			out = append(out, time.Since(t))
		}
		return out, failed, nil
	}
	idle, idleFailed, err := measure("other-idle", 8)
	if err != nil {
		return nil, err
	}

	var th struct{ ID string }
	if code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", "flooder", "", &th); err != nil || code != http.StatusCreated {
		return nil, fmt.Errorf("create thread: %d %v", code, err)
	}
	words := strings.Repeat("w ", 200) // 20 s at 100 ms a word: longer than the measure
	turn, err := openStream(ctx, http.MethodPost, in.base+"/v1/threads/"+th.ID+"/turns", "flooder", `{"message":"/slow 100 `+words+`"}`)
	if err != nil {
		return nil, err
	}
	defer turn.Body.Close()
	turnID, err := firstTurnID(turn)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	complete, opened := 0, 0
	for range followers {
		resp, err := openStream(ctx, http.MethodGet, in.base+"/v1/threads/"+th.ID+"/turns/"+turnID+"/events", "flooder", "")
		if err != nil {
			return nil, err
		}
		opened++
		wg.Go(func() {
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			if strings.Contains(string(data), "event: turn.completed") {
				mu.Lock()
				complete++
				mu.Unlock()
			}
		})
	}
	busy, busyFailed, err := measure("other", 8)
	if err != nil {
		return nil, err
	}
	rest, _ := io.ReadAll(turn.Body)
	wg.Wait()
	floodDone := strings.Contains(string(rest), "event: turn.completed")
	ratio50 := float64(percentile(busy, 50)) / float64(percentile(idle, 50))
	ratio99 := float64(percentile(busy, 99)) / float64(percentile(idle, 99))
	return []row{{fmt.Sprintf("a principal holding %d reattach streams of its turn (pool_size=8) beside another", opened),
		fmt.Sprintf("other's turn + list p50 %s → %s (%.2f×), p99 %s → %s (%.2f×); failed %d idle, %d flooded; flooder's turn completed %v, %d/%d followers got its end",
			percentile(idle, 50).Round(time.Millisecond), percentile(busy, 50).Round(time.Millisecond), ratio50,
			percentile(idle, 99).Round(time.Millisecond), percentile(busy, 99).Round(time.Millisecond), ratio99,
			idleFailed, busyFailed, floodDone, complete, opened),
		"≤ 2× idle, no lease lost", status(ratio50 <= 2 && ratio99 <= 2 && idleFailed+busyFailed == 0 && floodDone && complete == opened)}}, nil
}

// stalledStreams: streamed turns whose replies are far larger than
// CHATD_SSE_BUFFER_BYTES, to clients that never read; chatd's gauge of
// queued bytes is sampled while they run.
func stalledStreams(ctx context.Context, _ config, bin string) ([]row, error) {
	const streams, bound = 8, 1 << 20
	in, err := startChatd(ctx, bin, "CHATD_RATE_LIMIT=0", "CHATD_MAX_BODY_BYTES=8388608", "CHATD_WRITE_TIMEOUT=20s")
	if err != nil {
		return nil, err
	}
	defer in.stop()
	addr := strings.TrimPrefix(in.base, "http://")
	// Words of 4 KB streamed 1 ms apart: 1,500 of them, 6 MB a turn.
	word := strings.Repeat("s", 4<<10)
	message := `{"message":"/slow 1 ` + strings.TrimSpace(strings.Repeat(word+" ", 1500)) + `"}`
	var threads []string
	for range streams {
		var th struct{ ID string }
		if code, err := call(ctx, http.MethodPost, in.base+"/v1/threads", "stalled", "", &th); err != nil || code != http.StatusCreated {
			return nil, fmt.Errorf("create thread: %d %v", code, err)
		}
		threads = append(threads, th.ID)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/threads/%s/turns HTTP/1.1\r\nHost: x\r\nX-Chatd-Principal: stalled\r\nAccept: text/event-stream\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", th.ID, len(message), message)
	}
	peak, dropped, persisted := 0.0, 0.0, 0
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && persisted < streams {
		m, err := metrics(in.base)
		if err != nil {
			return nil, err
		}
		peak = max(peak, m["chatd_stream_queued_bytes"])
		dropped = m["chatd_streams_dropped_total"]
		persisted = 0
		for _, id := range threads {
			var page struct{ Messages []struct{ Role string } }
			if code, err := call(ctx, http.MethodGet, in.base+"/v1/threads/"+id+"/messages", "stalled", "", &page); err == nil && code == 200 && len(page.Messages) == 2 {
				persisted++
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return []row{{fmt.Sprintf("%d streamed 6 MB replies to clients that never read", streams),
		fmt.Sprintf("peak queued %.2f MB for all %d (%.2f MB a stream); %.0f dropped; %d/%d turns persisted",
			peak/(1<<20), streams, peak/streams/(1<<20), dropped, persisted, streams),
		"≤ CHATD_SSE_BUFFER_BYTES (1 MiB) a stream, dropped, turns kept",
		status(peak <= streams*bound && int(dropped) == streams && persisted == streams)}}, nil
}

// openStream sends a request asking for Server-Sent Events and returns the
// started stream.
func openStream(ctx context.Context, method, url, principal, body string) (*http.Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Chatd-Principal", principal)
	req.Header.Set("Accept", "text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := streamClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: status %d", method, url, resp.StatusCode)
	}
	return resp, nil
}

// streamClient holds streams open as long as they last.
var streamClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

// firstTurnID reads a turn stream's message.start and returns its turn ID,
// leaving the rest of the stream unread.
func firstTurnID(resp *http.Response) (string, error) {
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if _, rest, ok := strings.Cut(line, `"turn_id":"`); ok {
			id, _, _ := strings.Cut(rest, `"`)
			resp.Body = io.NopCloser(r)
			return id, nil
		}
	}
}

// metrics reads chatd's /metrics samples without labels.
func metrics(base string) (map[string]float64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if ok && !strings.HasPrefix(name, "#") {
			out[name], _ = strconv.ParseFloat(value, 64)
		}
	}
	return out, nil
}
