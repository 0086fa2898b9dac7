package agent_test

import (
	"bufio"
	"bytes"
	"chatd/internal/streamtest"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chatd/internal/processor"
	"chatd/internal/processor/agent"
	"chatd/internal/processor/echo"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// instantModel answers every request at once with the same stream: the reply
// split in chunks of a few words. onFirst, when set, is called with the time
// just before the first text chunk is written.
func instantModel(tb testing.TB, reply string, onFirst func(time.Time)) *httptest.Server {
	tb.Helper()
	first, rest := instantStream(reply)
	whole := append(slices.Clone(first), rest...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if onFirst == nil {
			// Instant: the whole answer in one write.
			_, _ = w.Write(whole)
			return
		}
		onFirst(time.Now())
		_, _ = w.Write(first)
		w.(http.Flusher).Flush()
		_, _ = w.Write(rest)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// inProcessModel is an instant model without a network: an HTTP client
// whose transport answers every request with the stream at once.
func inProcessModel(reply string) *http.Client {
	first, rest := instantStream(reply)
	whole := append(first, rest...)
	return &http.Client{Transport: streamtest.RoundTripper(func(r *http.Request) (*http.Response, error) {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
		return &http.Response{
			StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:  http.Header{"Content-Type": {"text/event-stream"}},
			Body:    io.NopCloser(bytes.NewReader(whole)),
			Request: r,
		}, nil
	})}
}

// instantStream is a streamed reply in chunks of four words: the first chunk
// and the rest ([DONE] included).
func instantStream(reply string) (first, rest []byte) {
	words := strings.SplitAfter(reply, " ")
	var body bytes.Buffer
	for i := 0; i < len(words); i += 4 {
		delta := map[string]any{"content": strings.Join(words[i:min(i+4, len(words))], "")}
		if i == 0 {
			delta["role"] = "assistant"
		}
		line := []byte("data: " + chunk(delta, "") + "\n\n")
		if i == 0 {
			first = line
			continue
		}
		body.Write(line)
	}
	body.WriteString("data: " + chunk(map[string]any{}, "stop") + "\n\n")
	body.WriteString("data: [DONE]\n\n")
	return first, body.Bytes()
}

const twentyWords = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"

// newBenchChatd serves the agent (on the model at baseURL, through client
// when not nil) and echo from the embedded store.
func newBenchChatd(b *testing.B, baseURL string, client *http.Client) *chatd {
	b.Helper()
	cfg := agent.Config{BaseURL: baseURL, Model: "bench", MaxSteps: agent.DefaultMaxSteps,
		HistoryWindow: agent.DefaultHistoryWindow, AskUser: true, HTTPClient: client}
	st := store.NewMemory(store.Options{ThreadTTL: time.Hour, HistoryMax: 1000, IdempotencyTTL: time.Hour})
	b.Cleanup(func() { _ = st.Close() })
	reg, err := processor.NewRegistry(map[string]processor.Processor{"agent": mustAgent(b, cfg), "echo": echo.New()}, "agent")
	require.NoError(b, err)
	srv := httptest.NewServer(newHandler(st, reg, turn.DefaultConfig))
	b.Cleanup(srv.Close)
	return &chatd{Server: srv}
}

// benchThread creates a thread bound to proc.
func benchThread(b *testing.B, client *http.Client, base, proc string) string {
	b.Helper()
	resp, err := client.Post(base+"/v1/threads", "application/json", strings.NewReader(fmt.Sprintf(`{"processor":%q}`, proc)))
	require.NoError(b, err)
	defer resp.Body.Close()
	var th struct{ ID string }
	require.NoError(b, json.NewDecoder(resp.Body).Decode(&th))
	require.NotEmpty(b, th.ID)
	return th.ID
}

// BenchmarkFirstDelta measures, per streamed turn, the time from the model
// writing its first text chunk to the client reading the first text.delta,
// through chatd and through a bare relay that copies the model's stream to
// the client unparsed over the same two loopback hops. added-p50-ms is
// chatd's p50 minus the relay's, measured interleaved in the same run: what
// chatd adds (goal ≤ 1 ms).
func BenchmarkFirstDelta(b *testing.B) {
	firsts := make(chan time.Time, 1)
	model := instantModel(b, twentyWords, func(t time.Time) { firsts <- t })
	c := newBenchChatd(b, model.URL+"/v1", nil)
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Post(model.URL+"/v1/chat/completions", "application/json", r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadSlice('\n')
			_, _ = w.Write(line)
			if len(line) == 1 {
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	b.Cleanup(relay.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

	var viaChatd, viaRelay []time.Duration
	var thread string
	b.ResetTimer()
	for i := range b.N {
		if i%20 == 0 {
			b.StopTimer()
			thread = benchThread(b, client, c.URL, "agent")
			b.StartTimer()
		}
		req, _ := http.NewRequest(http.MethodPost, c.URL+"/v1/threads/"+thread+"/turns", strings.NewReader(`{"message":"count to twenty"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		got := streamtest.FirstData(b, client, req, `"delta":"one `)
		viaChatd = append(viaChatd, got.Sub(<-firsts))

		req, _ = http.NewRequest(http.MethodPost, relay.URL, strings.NewReader(`{"model":"bench","messages":[]}`))
		got = streamtest.FirstData(b, client, req, `"content":"one `)
		viaRelay = append(viaRelay, got.Sub(<-firsts))
	}
	b.StopTimer()
	pc, pr := streamtest.Percentile(viaChatd, 50), streamtest.Percentile(viaRelay, 50)
	b.ReportMetric(streamtest.Ms(pc), "chatd-p50-ms")
	b.ReportMetric(streamtest.Ms(pr), "relay-p50-ms")
	b.ReportMetric(streamtest.Ms(pc-pr), "added-p50-ms")
	b.ReportMetric(streamtest.Ms(streamtest.Percentile(viaChatd, 90)-streamtest.Percentile(viaRelay, 90)), "added-p90-ms")
}

// BenchmarkAgentTurnVsEcho compares the throughput of an agent turn whose
// model answers instantly (twenty words in five chunks) with an echo turn of
// the same twenty words, both non-streamed JSON turns on the embedded store
// from sixteen concurrent clients, each on its own thread. The two run in
// alternating batches so that load from elsewhere on the machine falls on
// both alike; agent/echo is the ratio (goal ≥ 0.5). The agent reads its
// default history window of 20 messages; echo reads none.
//
// model=loopback serves the model over HTTP on loopback in this process, so
// its server's work counts against the agent too; model=in-process answers
// from the HTTP client's transport, which leaves chatd's own work (and the
// client side of the model request).
func BenchmarkAgentTurnVsEcho(b *testing.B) {
	b.Run("model=loopback", func(b *testing.B) {
		model := instantModel(b, twentyWords, nil)
		benchAgentVsEcho(b, newBenchChatd(b, model.URL+"/v1", nil))
	})
	b.Run("model=in-process", func(b *testing.B) {
		benchAgentVsEcho(b, newBenchChatd(b, "http://model.invalid/v1", inProcessModel(twentyWords)))
	})
}

func benchAgentVsEcho(b *testing.B, c *chatd) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	const workers = 16
	threads := map[string][]string{}
	for _, proc := range []string{"echo", "agent"} {
		for range workers {
			threads[proc] = append(threads[proc], benchThread(b, client, c.URL, proc))
		}
	}
	body := []byte(`{"message":"` + twentyWords + `"}`)
	batch := func(proc string, turns int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			n := turns / workers
			if w < turns%workers {
				n++
			}
			wg.Add(1)
			go func(thread string, n int) {
				defer wg.Done()
				for range n {
					resp, err := client.Post(c.URL+"/v1/threads/"+thread+"/turns", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("%s turn: %d", proc, resp.StatusCode)
						return
					}
				}
			}(threads[proc][w], n)
		}
		wg.Wait()
		return time.Since(start)
	}
	// Warm up both, so neither pays for connections or first allocations.
	batch("echo", 40)
	batch("agent", 40)

	const rounds = 5
	var echoTime, agentTime time.Duration
	var echoTurns, agentTurns int
	b.ResetTimer()
	for r := range rounds {
		n := b.N / rounds
		if r < b.N%rounds {
			n++
		}
		if n == 0 {
			continue
		}
		echoTime += batch("echo", n)
		agentTime += batch("agent", n)
		echoTurns += n
		agentTurns += n
	}
	b.StopTimer()
	if echoTurns == 0 {
		return
	}
	echoRate := float64(echoTurns) / echoTime.Seconds()
	agentRate := float64(agentTurns) / agentTime.Seconds()
	b.ReportMetric(echoRate, "echo-turns/s")
	b.ReportMetric(agentRate, "agent-turns/s")
	b.ReportMetric(agentRate/echoRate, "agent/echo")
}
