package remote_test

import (
	"bufio"
	"bytes"
	"chatd/internal/streamtest"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"chatd/internal/processor"
	"chatd/internal/processor/remote"
	"chatd/internal/turn"
)

const twentyWords = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"

// BenchmarkRemoteTurnVsEcho compares the throughput of a remote
// processor's turn with an echo turn, both on the embedded store from
// sixteen concurrent clients, each on its own thread, in alternating
// batches so that load from elsewhere on the machine falls on both alike;
// remote/echo is the ratio (goal ≥ 0.5 for JSON).
//
// processor=node is the Node example (examples/processors/node), a process
// of its own on loopback that checks each request's signature, so its
// serving counts against the remote turn; processor=in-process answers the
// same bytes from the HTTP client's transport, which leaves chatd's own
// work: encoding and signing the request, reading and checking the answer.
//
// json posts twenty words for a JSON answer: the processor greets with them
// (25 words, streamed as 25 NDJSON deltas that chatd reads and drops, since
// nobody streams), echo repeats them. sse asks for Server-Sent Events: the
// remote turn relays the 25 deltas, echo streams its twenty words one delta
// each (/slow 0). The remote processor gets chatd's default history window
// of 50 messages in every request; echo reads none.
func BenchmarkRemoteTurnVsEcho(b *testing.B) {
	b.Run("processor=node", func(b *testing.B) {
		node := examples[1]
		name, proc := exampleProcessor(b, node, startExample(b, node))
		benchRemoteVsEcho(b, newChatd(b, newMemoryStore(b), map[string]processor.Processor{name: proc}, turn.DefaultConfig), name)
	})
	b.Run("processor=in-process", func(b *testing.B) {
		proc := mustRemote(b, remote.Config{Name: "node", URL: "http://processor.invalid/", Secret: exampleSecret, HTTPClient: inProcessGreeter()})
		benchRemoteVsEcho(b, newChatd(b, newMemoryStore(b), map[string]processor.Processor{"node": proc}, turn.DefaultConfig), "node")
	})
}

func benchRemoteVsEcho(b *testing.B, c *chatd, name string) {
	b.Run("json", func(b *testing.B) {
		benchVersus(b, c, name, `{"message":"`+twentyWords+`"}`, `{"message":"`+twentyWords+`"}`, false)
	})
	b.Run("sse", func(b *testing.B) {
		benchVersus(b, c, name, `{"message":"`+twentyWords+`"}`, `{"message":"/slow 0 `+twentyWords+`"}`, true)
	})
}

// inProcessGreeter is the Node example's greeting without a network: an
// HTTP client whose transport reads each request and answers with the
// stream the example writes for the benchmark's message.
func inProcessGreeter() *http.Client {
	text := "Hello, alice! You said: " + twentyWords
	var stream bytes.Buffer
	for _, word := range strings.SplitAfter(text, " ") {
		line, _ := json.Marshal(map[string]string{"type": "text.delta", "delta": word})
		stream.Write(append(line, '\n'))
	}
	result, _ := json.Marshal(map[string]any{"type": "result", "text": text,
		"_meta": map[string]any{"drupal.org/ai.suggested_replies": []string{"card 42", "form"}}})
	stream.Write(append(result, '\n'))
	body := stream.Bytes()
	return &http.Client{Transport: streamtest.RoundTripper(func(r *http.Request) (*http.Response, error) {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
		return &http.Response{
			StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:  http.Header{"Content-Type": {"application/x-ndjson"}},
			Body:    io.NopCloser(bytes.NewReader(body)),
			Request: r,
		}, nil
	})}
}

func benchVersus(b *testing.B, c *chatd, remoteName, remoteBody, echoBody string, stream bool) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	const workers = 16
	threads := map[string][]string{}
	for _, proc := range []string{"echo", remoteName} {
		for range workers {
			threads[proc] = append(threads[proc], c.mustThread(b, proc))
		}
	}
	bodies := map[string]string{"echo": echoBody, remoteName: remoteBody}
	batch := func(proc string, turns int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			n := turns / workers
			if w < turns%workers {
				n++
			}
			wg.Go(func() {
				for range n {
					if err := benchTurn(client, c.URL, threads[proc][w], bodies[proc], stream); err != nil {
						b.Errorf("%s turn: %v", proc, err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	// Warm up both, so neither pays for connections or first allocations.
	batch("echo", 80)
	batch(remoteName, 80)

	const rounds = 5
	var echoTime, remoteTime time.Duration
	turns := 0
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
		remoteTime += batch(remoteName, n)
		turns += n
	}
	b.StopTimer()
	if turns == 0 {
		return
	}
	echoRate, remoteRate := float64(turns)/echoTime.Seconds(), float64(turns)/remoteTime.Seconds()
	b.ReportMetric(echoRate, "echo-turns/s")
	b.ReportMetric(remoteRate, "remote-turns/s")
	b.ReportMetric(remoteRate/echoRate, "remote/echo")
}

// benchTurn posts one turn and reads its answer to the end.
func benchTurn(client *http.Client, base, thread, body string, stream bool) error {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/threads/"+thread+"/turns", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Chatd-Principal", "alice")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || (stream && !bytes.Contains(data, []byte("event: turn.completed"))) {
		return fmt.Errorf("%d: %.200s", resp.StatusCode, data)
	}
	return nil
}

// BenchmarkRemoteFirstDelta measures, per streamed turn, the time from the
// remote processor writing its first text.delta line to the client reading
// the first text.delta event, through chatd and through a bare relay that
// copies the processor's stream to the client unparsed over the same two
// loopback hops. The processor is an in-process fake, so that the instant
// it writes is known. added-p50-ms is chatd's p50 minus the relay's,
// measured interleaved in the same run: what chatd adds (goal ≤ 1 ms).
func BenchmarkRemoteFirstDelta(b *testing.B) {
	firsts := make(chan time.Time, 1)
	fake := timedProcessor(b, firsts)
	relay := ndjsonRelay(b, fake.URL)
	c := newChatd(b, newMemoryStore(b), map[string]processor.Processor{"fake": mustRemote(b, remote.Config{Name: "fake", URL: fake.URL})}, turn.DefaultConfig)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

	var viaChatd, viaRelay []time.Duration
	var thread string
	b.ResetTimer()
	for i := range b.N {
		if i%20 == 0 {
			b.StopTimer()
			thread = c.mustThread(b, "fake")
			b.StartTimer()
		}
		req, _ := http.NewRequest(http.MethodPost, c.URL+"/v1/threads/"+thread+"/turns", strings.NewReader(`{"message":"count to twenty"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("X-Chatd-Principal", "alice")
		got := streamtest.FirstData(b, client, req, `"delta":"one `)
		viaChatd = append(viaChatd, got.Sub(<-firsts))

		req, _ = http.NewRequest(http.MethodPost, relay.URL, strings.NewReader(`{"message":"count to twenty"}`))
		got = streamtest.FirstData(b, client, req, `"delta":"one `)
		viaRelay = append(viaRelay, got.Sub(<-firsts))
	}
	b.StopTimer()
	pc, pr := streamtest.Percentile(viaChatd, 50), streamtest.Percentile(viaRelay, 50)
	b.ReportMetric(streamtest.Ms(pc), "chatd-p50-ms")
	b.ReportMetric(streamtest.Ms(pr), "relay-p50-ms")
	b.ReportMetric(streamtest.Ms(pc-pr), "added-p50-ms")
	b.ReportMetric(streamtest.Ms(streamtest.Percentile(viaChatd, 90)-streamtest.Percentile(viaRelay, 90)), "added-p90-ms")
}

// timedProcessor streams twenty words as NDJSON deltas, sending firsts
// the time just before it writes the first.
func timedProcessor(b *testing.B, firsts chan<- time.Time) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		firsts <- time.Now()
		for i, word := range strings.SplitAfter(twentyWords, " ") {
			line, _ := json.Marshal(map[string]string{"type": "text.delta", "delta": word})
			_, _ = w.Write(append(line, '\n'))
			if i == 0 {
				w.(http.Flusher).Flush()
			}
		}
		fmt.Fprintf(w, "{\"type\":\"result\",\"text\":%q}\n", twentyWords)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// ndjsonRelay posts each request to target and copies its stream to the
// client line by line as SSE data, unparsed: the least a relay does.
func ndjsonRelay(b *testing.B, target string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Post(target, "application/json", r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadSlice('\n')
			if len(line) > 0 {
				_, _ = w.Write(append([]byte("data: "), line...))
				_, _ = w.Write([]byte("\n"))
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}
