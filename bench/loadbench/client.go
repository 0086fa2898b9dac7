package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// client talks to one server under test.
type client struct {
	base string
	http *http.Client
}

// newHTTPClient returns a client whose transport keeps a warm connection per
// worker, so a run measures requests, not TCP handshakes. It refuses to dial
// anything but loopback.
func newHTTPClient(concurrency int) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, _, err := net.SplitHostPort(addr)
				if err != nil || host != "127.0.0.1" {
					return nil, fmt.Errorf("loadbench only talks to 127.0.0.1, not %q", addr)
				}
				return dialer.DialContext(ctx, network, addr)
			},
			MaxIdleConns:        4 * concurrency,
			MaxIdleConnsPerHost: 2 * concurrency,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// do sends a request and returns the status and body, read to the end so the
// connection goes back to the pool.
func (c *client) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// expect sends a request and decodes a JSON answer with the wanted status
// into out (when non-nil).
func (c *client) expect(ctx context.Context, method, path string, body []byte, want int, out any) error {
	status, data, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	if status != want {
		return fmt.Errorf("%s %s: status %d, want %d: %s", method, path, status, want, truncate(data, 300))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding answer: %w", method, path, err)
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// createThread creates a thread bound to processor and returns its ID.
func (c *client) createThread(ctx context.Context, processor string) (string, error) {
	body, _ := json.Marshal(map[string]string{"processor": processor})
	var th struct {
		ID string `json:"id"`
	}
	if err := c.expect(ctx, http.MethodPost, "/v1/threads", body, http.StatusCreated, &th); err != nil {
		return "", err
	}
	return th.ID, nil
}

// turnAnswer is the part of a TurnResult the benchmark checks.
type turnAnswer struct {
	TurnID      string `json:"turn_id"`
	Status      string `json:"status"`
	Elicitation *struct {
		Meta map[string]any `json:"_meta"`
	} `json:"elicitation"`
}

// turn posts a turn and checks that it ended with wantStatus.
func (c *client) turn(ctx context.Context, threadID string, body []byte, wantStatus string) (turnAnswer, error) {
	var ans turnAnswer
	if err := c.expect(ctx, http.MethodPost, "/v1/threads/"+threadID+"/turns", body, http.StatusOK, &ans); err != nil {
		return ans, err
	}
	if ans.Status != wantStatus {
		return ans, fmt.Errorf("turn status %q, want %q", ans.Status, wantStatus)
	}
	return ans, nil
}

// streamTurn posts a turn asking for Server-Sent Events and returns the time
// to the first text.delta event; the call returns once turn.completed has
// arrived and the stream has ended.
func (c *client) streamTurn(ctx context.Context, threadID string, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/threads/"+threadID+"/turns", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("stream: status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), truncate(data, 300))
	}
	var firstDelta time.Duration
	completed := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		event, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			continue
		}
		switch strings.TrimSpace(event) {
		case "text.delta":
			if firstDelta == 0 {
				firstDelta = time.Since(start)
			}
		case "turn.completed":
			completed = true
		case "error":
			return 0, errors.New("stream ended with an error event")
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !completed || firstDelta == 0 {
		return 0, fmt.Errorf("stream ended without deltas and turn.completed (delta seen: %t, completed: %t)", firstDelta > 0, completed)
	}
	return firstDelta, nil
}

// protocolStream is how a frontend protocol's stream marks a text delta, its
// successful end and a failure, each as a substring of a data line.
type protocolStream struct {
	path              string
	delta, end, fails string
}

// The frontend protocols' streams, as the benchmark reads them.
var (
	aiSDKStream = protocolStream{path: "/v1/ai-sdk/chat", delta: `"type":"text-delta"`, end: `[DONE]`, fails: `"type":"error"`}
	aguiStream  = protocolStream{path: "/v1/ag-ui", delta: `"type":"TEXT_MESSAGE_CONTENT"`, end: `"type":"RUN_FINISHED"`, fails: `"type":"RUN_ERROR"`}
)

// protocolTurn posts a turn to a frontend protocol's endpoint and reads its
// stream to the end, returning the time to the first text delta.
func (c *client) protocolTurn(ctx context.Context, p protocolStream, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+p.path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("%s: status %d %s: %s", p.path, resp.StatusCode, resp.Header.Get("Content-Type"), truncate(data, 300))
	}
	var firstDelta time.Duration
	ended := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case strings.Contains(data, p.delta):
			if firstDelta == 0 {
				firstDelta = time.Since(start)
			}
		case strings.Contains(data, p.end):
			ended = true
		case strings.Contains(data, p.fails):
			return 0, fmt.Errorf("%s: the stream failed: %s", p.path, truncate([]byte(data), 300))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !ended || firstDelta == 0 {
		return 0, fmt.Errorf("%s: stream ended without deltas and its end (delta seen: %t, ended: %t)", p.path, firstDelta > 0, ended)
	}
	return firstDelta, nil
}
