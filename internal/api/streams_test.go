package api_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/redistest"
	"chatd/internal/turn"
)

// readAllEvents reads st to its end from any goroutine, without checking
// each event against openapi.yaml (the original stream it is compared with
// is checked): unlike readAll it reports a broken stream as an error
// instead of failing the test.
func readAllEvents(st *sseStream) ([]sseEvent, error) {
	var out []sseEvent
	var ev sseEvent
	for {
		line, err := st.r.ReadString('\n')
		if err == io.EOF && line == "" && ev.event == "" {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		line = strings.TrimSuffix(line, "\n")
		field, value, _ := strings.Cut(line, ": ")
		switch {
		case line == "" && ev.event != "":
			out, ev = append(out, ev), sseEvent{}
		case field == "id":
			ev.id = value
		case field == "event":
			ev.event = value
		case field == "data":
			ev.data = []byte(value)
		}
	}
}

// TestReattachFloodLeavesOthersAlone: one principal holding 190 reattach
// streams of its running turn takes nothing from another principal. The
// store's pool is small (8 connections), so followers that each held one
// in a blocking read would leave the other principal's turn no connection
// to renew its lease or commit with, and its list and /readyz none to read
// with; followers share one read on a pool of their own instead. Every
// follower still gets every event, once, in order.
func TestReattachFloodLeavesOthersAlone(t *testing.T) {
	const followers = 190
	srv := redistest.Start(t)
	st := newTestStoreAt(t, srv.URL()+"?pool_size=8")
	ts := newTestServer(t, withStore(st),
		withConfig(func(c *api.Config) { c.MaxStreams = 200 }),
		withTurnConfig(func(c *turn.Config) { c.LockLease = testLease }))

	aliceThread := ts.mustCreateThread(t, alice, "echo")
	words := strings.Repeat("word ", 30)
	orig := ts.streamTurn(t, alice, aliceThread, "/slow 100 "+words)
	start := orig.nextEvent()
	turnID := startOf(t, start)["turn_id"]

	streams := make([]*sseStream, followers)
	for i := range streams {
		s, resp := ts.reattach(t, alice, aliceThread, turnID, -1)
		require.Nil(t, resp, "follower %d", i)
		streams[i] = s
	}
	got := make([][]sseEvent, followers)
	errs := make([]error, followers)
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Go(func() { got[i], errs[i] = readAllEvents(s) })
	}

	// Bob's work, while alice's followers wait on her turn (which runs
	// about three seconds, three times Bob's lease).
	bobThread := ts.mustCreateThread(t, bob, "echo")
	result := ts.mustTurn(t, bob, bobThread, "/slow 100 one two three four five six seven eight nine ten eleven twelve")
	assert.Equal(t, "completed", result.Status, "bob's turn kept its lease")
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads", as: bob}), http.StatusOK)
	mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/readyz", as: nobody}), http.StatusOK)

	want := append([]sseEvent{start}, eventsOnly(orig.readAll())...)
	require.Equal(t, "turn.completed", want[len(want)-1].event, "alice's turn completed")
	wg.Wait()
	for i := range streams {
		require.NoError(t, errs[i], "follower %d", i)
		require.Equal(t, want, got[i], "follower %d got every event once, in order", i)
	}
}

// TestMaxStreams: a principal holding Config.MaxStreams open streams is
// refused another — streamed turns of every protocol and reattach streams
// count alike — with 429 rate_limited before any turn begins, while its
// plain JSON requests and other principals' streams go on; closing a
// stream frees its place.
func TestMaxStreams(t *testing.T) {
	ts := newTestServer(t, withConfig(func(c *api.Config) { c.MaxStreams = 2 }))
	thread := ts.mustCreateThread(t, alice, "echo")
	first := ts.streamTurn(t, alice, thread, "/slow 200 a b c d e f g h i j k l m n o p q r s t")
	turnID := startOf(t, first.nextEvent())["turn_id"]
	follower, resp := ts.reattach(t, alice, thread, turnID, -1)
	require.Nil(t, resp)

	other := ts.mustCreateThread(t, alice, "echo")
	refusals := []testRequest{
		{method: http.MethodPost, path: turnPath(other), as: alice, body: mustJSON(t, map[string]string{"message": "hi"}),
			header: http.Header{"Accept": {"text/event-stream"}}},
		{method: http.MethodGet, path: eventsPath(thread, turnID), as: alice},
		{method: http.MethodPost, path: "/v1/ai-sdk/chat", as: alice, body: aiSDKBody(other, "hi")},
		{method: http.MethodPost, path: "/v1/ag-ui", as: alice, body: aguiBody(other, "hi")},
		{method: http.MethodPost, path: "/v1/deep-chat", as: alice, body: deepChatBody(other, "hi"), header: sseAccept},
	}
	for _, r := range refusals {
		resp := ts.do(t, r)
		if r.path == "/v1/deep-chat" {
			// deep-chat reads errors in a shape of its own.
			assert.Equal(t, http.StatusTooManyRequests, resp.Status)
			assert.Contains(t, string(resp.Body), "too many open streams")
		} else {
			mustProblem(t, resp, http.StatusTooManyRequests, "rate_limited")
		}
		assert.Equal(t, "1", resp.Header.Get("Retry-After"), r.path)
	}
	assert.Len(t, ts.mustHistory(t, alice, other), 0, "a refused stream began no turn")
	assert.Equal(t, "completed", ts.mustTurn(t, alice, other, "plain").Status, "a JSON turn is not a stream")

	bobThread := ts.mustCreateThread(t, bob, "echo")
	eventsOnly(ts.streamTurn(t, bob, bobThread, "hi").readAll())

	follower.close()
	// The follower's handler returns once it notices its client left; the
	// next stream is refused until then, and admitted after.
	require.Eventually(t, func() bool {
		s, resp := ts.reattach(t, alice, thread, turnID, -1)
		if resp != nil {
			mustProblem(t, resp, http.StatusTooManyRequests, "rate_limited")
			return false
		}
		s.close()
		return true
	}, 10*time.Second, 20*time.Millisecond, "a closed stream frees its place")
	eventsOnly(first.readAll())
}

// readRaw reads st to its end from any goroutine and returns its events
// and how many heartbeat comments came, without checking each event
// against openapi.yaml.
func readRaw(st *sseStream) (events []sseEvent, heartbeats int, err error) {
	var ev sseEvent
	for {
		line, err := st.r.ReadString('\n')
		if err == io.EOF && line == "" {
			return events, heartbeats, nil
		}
		if err != nil {
			return events, heartbeats, err
		}
		line = strings.TrimSuffix(line, "\n")
		field, value, _ := strings.Cut(line, ": ")
		switch {
		case line == ": heartbeat":
			heartbeats++
		case line == "" && ev.event != "":
			events, ev = append(events, ev), sseEvent{}
		case field == "id":
			ev.id = value
		case field == "event":
			ev.event = value
		case field == "data":
			ev.data = []byte(value)
		}
	}
}

// TestManyStreams: with 200 streamed turns open at once on Redis, every
// stream still gets its heartbeats while its turn is quiet and completes;
// one of them, left halfway and reattached on another instance after
// Last-Event-ID, gets the rest exactly once; one stopped ends stopped.
func TestManyStreams(t *testing.T) {
	const streams = 200
	st := newTestRedisStore(t, redistest.Start(t))
	cfg := func(c *api.Config) { c.MaxStreams = 2 * streams; c.HeartbeatInterval = 100 * time.Millisecond }
	ts := newTestServer(t, withStore(st), withConfig(cfg))
	other := newTestServer(t, withStore(st), withConfig(cfg))

	threads := make([]string, streams)
	open := make([]*sseStream, streams)
	for i := range open {
		threads[i] = ts.mustCreateThread(t, alice, "echo")
		// Words 300 ms apart: quiet long enough for heartbeats.
		open[i] = ts.streamTurn(t, alice, threads[i], "/slow 300 one two three four five six seven eight")
	}
	// The last two opened, still running whatever the machine's pace.
	const reattached, stopped = streams - 2, streams - 1

	// The reattached stream: read up to its second event, leave, and
	// follow the rest on the other instance.
	first := []sseEvent{open[reattached].nextEvent(), open[reattached].nextEvent()}
	open[reattached].close()
	turnID := startOf(t, first[0])["turn_id"]
	rest, resp := other.reattach(t, alice, threads[reattached], turnID, 2)
	require.Nil(t, resp)

	mustStatus(t, ts.do(t, testRequest{method: http.MethodPost, path: cancelPath(threads[stopped]), as: alice}), http.StatusAccepted)

	type result struct {
		events     []sseEvent
		heartbeats int
		err        error
	}
	results := make([]result, streams)
	var wg sync.WaitGroup
	for i, s := range open {
		if i == reattached {
			s = rest
		}
		wg.Go(func() {
			var r result
			r.events, r.heartbeats, r.err = readRaw(s)
			results[i] = r
		})
	}
	wg.Wait()

	for i, r := range results {
		require.NoError(t, r.err, "stream %d", i)
		require.NotEmpty(t, r.events, "stream %d", i)
		end := r.events[len(r.events)-1]
		require.Equal(t, "turn.completed", end.event, "stream %d ends with its turn", i)
		status := mustDecode[map[string]any](t, end.data)["status"]
		switch i {
		case stopped:
			assert.Equal(t, "stopped", status, "the stopped turn")
		case reattached:
			all := append(first, r.events...)
			for j, ev := range all {
				assert.Equal(t, strconv.Itoa(j+1), ev.id, "the reattached stream's events, once each, in order")
			}
			assert.Equal(t, "completed", status)
		default:
			assert.Equal(t, "completed", status, "stream %d", i)
			assert.Positive(t, r.heartbeats, "stream %d got heartbeats while its turn was quiet", i)
		}
	}
}
