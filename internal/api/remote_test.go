package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/processor/remote"
	"chatd/internal/turn"
)

// remoteSecret signs every request to the fake remote processors.
const remoteSecret = "remote-test-secret"

// fakeRemoteProcessor is a remote processor in another process, stood in
// for by an HTTP server on loopback: each path answers as one script says.
// Before any script runs, it recomputes the request's signature over the
// raw body it received, byte for byte, and answers 401 when it differs.
type fakeRemoteProcessor struct {
	*httptest.Server
	mu       sync.Mutex
	scripts  map[string]func(w http.ResponseWriter, r *http.Request, body []byte)
	requests map[string][][]byte
	headers  map[string][]http.Header
}

func newFakeRemoteProcessor(tb testing.TB) *fakeRemoteProcessor {
	tb.Helper()
	f := &fakeRemoteProcessor{scripts: map[string]func(http.ResponseWriter, *http.Request, []byte){},
		requests: map[string][][]byte{}, headers: map[string][]http.Header{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.Close)
	return f
}

// script makes path answer with fn and returns the remote processor that
// posts to it.
func (f *fakeRemoteProcessor) script(tb testing.TB, name string, timeout time.Duration, fn func(w http.ResponseWriter, r *http.Request, body []byte)) serverOption {
	tb.Helper()
	f.mu.Lock()
	f.scripts["/"+name] = fn
	f.mu.Unlock()
	p, err := remote.New(remote.Config{Name: name, URL: f.URL + "/" + name, Secret: remoteSecret, Timeout: timeout})
	require.NoError(tb, err)
	return withProcessor(name, p)
}

func (f *fakeRemoteProcessor) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.requests[r.URL.Path] = append(f.requests[r.URL.Path], body)
	f.headers[r.URL.Path] = append(f.headers[r.URL.Path], r.Header.Clone())
	fn := f.scripts[r.URL.Path]
	f.mu.Unlock()
	ts, mac, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Chatd-Signature"), "t="), ",v1=")
	h := hmac.New(sha256.New, []byte(remoteSecret))
	h.Write([]byte(ts + "."))
	h.Write(body)
	if !hmac.Equal([]byte(mac), []byte(hex.EncodeToString(h.Sum(nil)))) || fn == nil {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"title":"the fake refused the signature"}`)
		return
	}
	fn(w, r, body)
}

// sent returns the bodies and headers of the requests path received.
func (f *fakeRemoteProcessor) sent(name string) ([][]byte, []http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.requests["/"+name]...), append([]http.Header(nil), f.headers["/"+name]...)
}

func writeJSON(w http.ResponseWriter, contentType string, status int, body string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// ndjsonLines streams lines, flushing after each.
func ndjsonLines(w http.ResponseWriter, lines ...string) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	for _, l := range lines {
		_, _ = io.WriteString(w, l+"\n")
		w.(http.Flusher).Flush()
	}
}

const nestedForm = `{"message":"Where?","requestedSchema":{"type":"object","properties":{"address":{"type":"object","properties":{"street":{"type":"string"}}}}}}`

// TestRemoteProcessorFailures: every way a remote processor can fail is a
// 502 processor_failed whose detail says what happened — as the JSON
// answer and as the stream's error event — and nothing of the turn is
// kept.
func TestRemoteProcessorFailures(t *testing.T) {
	fake := newFakeRemoteProcessor(t)
	cases := remoteFailures()
	var opts []serverOption
	for _, c := range cases {
		opts = append(opts, fake.script(t, c.name, c.timeout, c.answer))
	}
	ts := newTestServer(t, opts...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			thread := ts.mustCreateThread(t, alice, c.name)
			p := mustProblem(t, ts.postTurn(t, alice, thread, "hi"), http.StatusBadGateway, "processor_failed")
			assert.Contains(t, p.Detail, c.detail)
			assert.NotContains(t, p.Detail, fake.URL, "the detail does not say where the processor runs")

			events := eventsOnly(ts.streamTurn(t, alice, thread, "hi").readAll())
			require.NotEmpty(t, events)
			last := events[len(events)-1]
			require.Equal(t, "error", last.event, "events: %v", eventNames(events))
			sp := mustDecode[wireProblem](t, last.data)
			assert.Equal(t, "processor_failed", sp.Code)
			assert.Equal(t, http.StatusBadGateway, sp.Status)
			assert.Contains(t, sp.Detail, c.detail)

			assert.Empty(t, ts.mustHistory(t, alice, thread), "nothing of a failed turn is kept")
			assert.Nil(t, ts.mustThread(t, alice, thread).PendingElicitation)
			bodies, _ := fake.sent(c.name)
			assert.Len(t, bodies, 2, "one request a turn: never retried")
		})
	}
}

// remoteFailure is a remote processor that fails: how it answers, and a
// part of the detail its turns fail with.
type remoteFailure struct {
	name    string
	timeout time.Duration
	answer  func(w http.ResponseWriter, r *http.Request, body []byte)
	detail  string
}

func remoteFailures() []remoteFailure {
	bigState := fmt.Sprintf(`{"text":"x","pause":{"elicitation":{"message":"ok?","requestedSchema":{"type":"object","properties":{}}},"state":{"blob":%q}}}`, strings.Repeat("a", 64<<10))
	return []remoteFailure{
		{"status-500", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "text/html", http.StatusInternalServerError, "<h1>Fatal error</h1> in /var/www/index.php")
		}, "the remote processor answered 500 Internal Server Error"},
		{"problem-500", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "application/problem+json", http.StatusInternalServerError, `{"type":"about:blank","title":"The site is in maintenance mode","status":500}`)
		}, "The site is in maintenance mode"},
		{"invalid-blocks", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "application/json", http.StatusOK, `{"text":"x","content_blocks":[{"type":"image","data":"not base64!","mimeType":"image/png"}]}`)
		}, "the remote processor's answer is invalid: content_blocks[0].data"},
		{"nested-form", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "application/json", http.StatusOK, `{"text":"x","pause":{"elicitation":`+nestedForm+`,"state":{}}}`)
		}, "pause.elicitation.requestedSchema"},
		{"record-key", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "application/json", http.StatusOK, `{"text":"x","_meta":{"drupal.org/ai.elicitation_id":"0190a5c4-0000-7000-8000-000000000000"}}`)
		}, `_meta["drupal.org/ai.elicitation_id"]: is written by chatd only`},
		{"broken-stream", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			ndjsonLines(w, `{"type":"text.delta","delta":"Hello"}`)
			_, _ = io.WriteString(w, `{"type":"text.del`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-line
		}, "the remote processor's stream broke before its result line"},
		{"stream-without-result", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			ndjsonLines(w, `{"type":"text.delta","delta":"Hello"}`)
		}, "the remote processor's stream ended before its result line"},
		{"bad-line", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			ndjsonLines(w, `{"type":"text.delta","delta":"Hello"}`, `{"type":"text.delta","delta":"x","_meta":{"a/b/c":1}}`)
		}, `line 2: _meta["a/b/c"]: invalid key`},
		{"state-over-64k", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "application/json", http.StatusOK, bigState)
		}, "pause.state: is 65547 bytes encoded; at most 65536 are allowed"},
		{"slow", 300 * time.Millisecond, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			ndjsonLines(w, `{"type":"text.delta","delta":"thinking… "}`)
			<-r.Context().Done()
		}, "the remote processor did not answer within its timeout of 300ms"},
		{"unknown-field", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "application/json", http.StatusOK, `{"text":"x","contentBlocks":[]}`)
		}, "the remote processor's answer is invalid: contentBlocks: unknown field"},
		{"text-not-a-string", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "application/json", http.StatusOK, `{"text":42}`)
		}, "the remote processor's answer is invalid: text: must be a string, not a number"},
		{"wrong-content-type", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, "text/plain", http.StatusOK, "hello")
		}, `content type "text/plain"; want application/json or application/x-ndjson`},
	}
}

// remoteRequest is the part of a remote processor's request these tests
// read.
type remoteRequest struct {
	ThreadID  string        `json:"thread_id"`
	TurnID    string        `json:"turn_id"`
	Processor string        `json:"processor"`
	Principal string        `json:"principal"`
	Message   wireMessage   `json:"message"`
	History   []wireMessage `json:"history"`
	Resume    *struct {
		ElicitationID string          `json:"elicitation_id"`
		State         json.RawMessage `json:"state"`
		Result        map[string]any  `json:"result"`
	} `json:"resume"`
}

// TestRemoteProcessorStreamsDeltasAsTheyArrive: the fake holds its answer
// back until the client has read the first delta through chatd's SSE, so
// the turn completes only if each delta reaches the client as it arrives.
func TestRemoteProcessorStreamsDeltasAsTheyArrive(t *testing.T) {
	fake := newFakeRemoteProcessor(t)
	clientRead := make(chan struct{})
	ts := newTestServer(t, fake.script(t, "streamer", 0, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		ndjsonLines(w, `{"type":"text.delta","delta":"Hello, ","_meta":{"example.com/x.step":1}}`)
		select {
		case <-clientRead:
		case <-time.After(waitTimeout):
			t.Error("the client never read the first delta")
		}
		ndjsonLines(w, `{"type":"text.delta","delta":"alice"}`, `{"type":"result","text":"Hello, alice"}`)
	}))
	thread := ts.mustCreateThread(t, alice, "streamer")
	st := ts.streamTurn(t, alice, thread, "hi")
	assert.Equal(t, "message.start", st.nextEvent().event)
	first := st.nextEvent()
	require.Equal(t, "text.delta", first.event)
	assert.JSONEq(t, `{"delta":"Hello, ","_meta":{"example.com/x.step":1}}`, string(first.data))
	close(clientRead)
	rest := eventsOnly(st.readAll())
	assert.Equal(t, []string{"text.delta", "turn.completed"}, eventNames(rest))
	res := mustDecode[wireTurnResult](t, rest[1].data)
	assert.Equal(t, "Hello, alice", res.Message.Message)
	assert.Len(t, ts.mustHistory(t, alice, thread), 2)
}

// TestRemoteProcessorRequestAndResume: the request carries the turn (its
// ID also in Chatd-Turn-Id), the caller and the history window; a pause
// resumes on another instance with the state it saved and the recorded
// answer, as a turn of its own.
func TestRemoteProcessorRequestAndResume(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		fake := newFakeRemoteProcessor(t)
		script := fake.script(t, "site", 0, func(w http.ResponseWriter, _ *http.Request, body []byte) {
			var req remoteRequest
			_ = json.Unmarshal(body, &req)
			switch {
			case req.Resume != nil:
				text, _ := json.Marshal(fmt.Sprintf("state %s, %s", req.Resume.State, req.Resume.Result["action"]))
				writeJSON(w, "application/json", http.StatusOK, `{"text":`+string(text)+`}`)
			case req.Message.Message == "form":
				writeJSON(w, "application/json", http.StatusOK, `{"text":"","pause":{"elicitation":{"message":"Your name?",
					"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},
					"_meta":{"example.com/x.form":"name"}},"state":{"asked":"name"}}}`)
			default:
				writeJSON(w, "application/json", http.StatusOK, `{"text":"hello"}`)
			}
		})
		st := newTestStore(t, kind)
		one := newTestServer(t, withStore(st), script, withTurnConfig(func(c *turn.Config) { c.HistoryWindow = 3 }))
		other := newTestServer(t, withStore(st), script, withTurnConfig(func(c *turn.Config) { c.HistoryWindow = 3 }))
		thread := one.mustCreateThread(t, alice, "site")
		first := one.mustTurn(t, alice, thread, "hi")
		paused := one.mustPause(t, alice, thread, "form")
		assert.Equal(t, "Your name?", paused.Message.Message, "an empty text is the question")
		assert.Equal(t, "name", paused.Elicitation.Meta["example.com/x.form"], "the elicitation keeps its _meta")
		resumed := other.mustAnswer(t, alice, thread, paused.Elicitation.id(), map[string]any{
			"action": "accept", "content": map[string]any{"name": "Ada"}, "_meta": map[string]any{"example.com/x.via": "test"}})
		assert.Equal(t, `state {"asked":"name"}, accept`, resumed.Message.Message)

		bodies, headers := fake.sent("site")
		require.Len(t, bodies, 3)
		reqs := make([]remoteRequest, 3)
		for i := range bodies {
			require.NoError(t, json.Unmarshal(bodies[i], &reqs[i]))
		}
		for i, res := range []wireTurnResult{first, paused, resumed} {
			assert.Equal(t, res.TurnID, reqs[i].TurnID)
			assert.Equal(t, res.TurnID, headers[i].Get("Chatd-Turn-Id"))
			assert.Equal(t, thread, reqs[i].ThreadID)
			assert.Equal(t, "site", reqs[i].Processor)
			assert.Equal(t, alice, reqs[i].Principal)
			assert.Equal(t, res.UserMessage.ID, reqs[i].Message.ID, "the message is the turn's user message")
		}
		assert.Empty(t, reqs[0].History)
		assert.Len(t, reqs[1].History, 2)
		require.Len(t, reqs[2].History, 3, "the newest CHATD_HISTORY_WINDOW messages")
		assert.Equal(t, []string{"hello", "form", "Your name?"}, []string{reqs[2].History[0].Message, reqs[2].History[1].Message, reqs[2].History[2].Message})
		require.NotNil(t, reqs[2].Resume)
		assert.Equal(t, paused.Elicitation.id(), reqs[2].Resume.ElicitationID)
		assert.Equal(t, map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}, "_meta": map[string]any{"example.com/x.via": "test"}},
			reqs[2].Resume.Result)
		assert.Contains(t, reqs[2].Message.Meta, "drupal.org/ai.elicitation_result", "the recorded answer")
	})
}

// TestRemoteProcessorStop: a stop mid-stream closes the remote processor's
// request, and the turn keeps what it had streamed, marked stopped.
func TestRemoteProcessorStop(t *testing.T) {
	fake := newFakeRemoteProcessor(t)
	closed := make(chan struct{})
	ts := newTestServer(t, fake.script(t, "runner", 0, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		ndjsonLines(w, `{"type":"text.delta","delta":"Thinking"}`)
		select {
		case <-r.Context().Done():
			close(closed)
		case <-time.After(waitTimeout):
			t.Error("the request was not closed")
		}
	}))
	thread := ts.mustCreateThread(t, alice, "runner")
	st := ts.streamTurn(t, alice, thread, "hi")
	assert.Equal(t, "message.start", st.nextEvent().event)
	require.Equal(t, "text.delta", st.nextEvent().event)
	ts.mustStop(t, alice, thread, "")
	res, _ := readRest(t, st)
	<-closed
	assert.Equal(t, "stopped", res.Status)
	assert.Equal(t, "Thinking", res.Message.Message)
	assert.Equal(t, true, res.Message.Meta[blocks.MetaStopped])
	sent, _ := fake.sent("runner")
	assert.Len(t, sent, 1, "never retried")
}
