package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/openapitest"
	"chatd/internal/processor"
	"chatd/internal/processor/demo"
	"chatd/internal/processor/echo"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// principalHeader is where the test servers' HeaderAuth reads the principal,
// so one test can act as alice and as bob.
const principalHeader = "X-Chatd-Principal"

const (
	alice = "alice"
	bob   = "bob"
	// nobody sends no principal header at all.
	nobody = ""
)

// testStoreOpts keep everything well inside a test's lifetime except what a
// test shortens on purpose through api.Config.
var testStoreOpts = store.Options{ThreadTTL: time.Hour, HistoryMax: 1000, IdempotencyTTL: time.Hour}

// waitTimeout bounds every polling loop; the loops return as soon as their
// condition holds, so this is a ceiling, not a duration any test takes.
const waitTimeout = 10 * time.Second

// storeKind names a store implementation the API tests run against.
type storeKind string

const (
	memoryStore storeKind = "memory"
	redisStore  storeKind = "redis"
	// clusterStore and sentinelStore are one Cluster (three masters with a
	// replica each) and one Sentinel set-up shared by the whole package:
	// starting one per test would cost seconds each. Tests keep apart by
	// their threads' random IDs.
	clusterStore  storeKind = "cluster"
	sentinelStore storeKind = "sentinel"
)

var storeKinds = []storeKind{memoryStore, redisStore, clusterStore, sentinelStore}

// implementations are the two store implementations, one Redis topology:
// for behaviour that does not depend on how Redis is deployed.
var implementations = []storeKind{memoryStore, redisStore}

// forEachImplementation runs fn as a subtest per store implementation
// (memory and single-node Redis); forEachStore adds the Redis topologies.
func forEachImplementation(t *testing.T, fn func(t *testing.T, kind storeKind)) {
	t.Helper()
	for _, kind := range implementations {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			fn(t, kind)
		})
	}
}

// forEachStore runs fn as a subtest per store implementation.
func forEachStore(t *testing.T, fn func(t *testing.T, kind storeKind)) {
	t.Helper()
	for _, kind := range storeKinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			fn(t, kind)
		})
	}
}

// closer is what both store implementations provide to shut down.
type closer interface{ Close() error }

// newTestStore returns a fresh store of kind; a Redis store gets a
// redis-server of its own, stopped when tb ends.
func newTestStore(tb testing.TB, kind storeKind) api.Store {
	tb.Helper()
	switch kind {
	case memoryStore:
		st := store.NewMemory(testStoreOpts)
		tb.Cleanup(func() { _ = st.Close() })
		return st
	case redisStore:
		return newTestRedisStore(tb, redistest.Start(tb))
	case clusterStore:
		return newTestStoreAt(tb, sharedRedis.cluster(tb).URL())
	case sentinelStore:
		return newTestStoreAt(tb, sharedRedis.sentinel(tb).URL())
	}
	tb.Fatalf("unknown store kind %q", kind)
	return nil
}

// newTestStoreWith returns a fresh embedded store, or one on a
// redis-server of its own, with opts.
func newTestStoreWith(tb testing.TB, kind storeKind, opts store.Options) api.Store {
	tb.Helper()
	if kind == memoryStore {
		st := store.NewMemory(opts)
		tb.Cleanup(func() { _ = st.Close() })
		return st
	}
	st, err := store.OpenRedis(redistest.Start(tb).URL(), opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// newTestRedisStore opens a store with its own client on srv, closed when tb
// ends; two of them on one server behave like two chatd instances.
func newTestRedisStore(tb testing.TB, srv *redistest.Server) api.Store {
	tb.Helper()
	return newTestStoreAt(tb, srv.URL())
}

// newTestStoreAt opens a store with its own client on the Redis that url
// names, closed when tb ends.
func newTestStoreAt(tb testing.TB, url string) api.Store {
	tb.Helper()
	st, err := store.OpenRedis(url, testStoreOpts)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// sharedRedis holds the package's shared Cluster and Sentinel set-ups,
// started by the first test that needs each and stopped by TestMain.
var sharedRedis sharedSetups

type sharedSetups struct {
	mu   sync.Mutex
	c    *redistest.Cluster
	s    *redistest.Sentinel
	errs map[string]error
}

func (sh *sharedSetups) cluster(tb testing.TB) *redistest.Cluster {
	tb.Helper()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.c == nil && sh.errs["cluster"] == nil {
		// Not tb's context: the set-up outlives the test that starts it.
		c, err := redistest.LaunchCluster(context.Background(), redistest.ClusterOptions{Bin: mustRedisServer(tb)})
		sh.c = c
		sh.setErr("cluster", err)
	}
	if err := sh.errs["cluster"]; err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return sh.c
}

func (sh *sharedSetups) sentinel(tb testing.TB) *redistest.Sentinel {
	tb.Helper()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.s == nil && sh.errs["sentinel"] == nil {
		s, err := redistest.LaunchSentinel(context.Background(), redistest.SentinelOptions{Bin: mustRedisServer(tb)})
		sh.s = s
		sh.setErr("sentinel", err)
	}
	if err := sh.errs["sentinel"]; err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return sh.s
}

// setErr remembers a failed start, so the tests after it fail at once
// instead of each trying again.
func (sh *sharedSetups) setErr(what string, err error) {
	if err == nil {
		return
	}
	if sh.errs == nil {
		sh.errs = map[string]error{}
	}
	sh.errs[what] = err
}

func (sh *sharedSetups) stop() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.c != nil {
		sh.c.Stop()
	}
	if sh.s != nil {
		sh.s.Stop()
	}
}

// mustRedisServer returns the redis-server binary, skipping the test when
// there is none (failing it under CI=true), as redistest.Start does.
func mustRedisServer(tb testing.TB) string {
	tb.Helper()
	bin, err := redistest.FindServer(tb.Context(), "")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redistest: %v", err)
		}
		tb.Skipf("redistest: %v (set CI=true to make this a failure)", err)
	}
	return bin
}

// countingProcessor counts the turns a processor runs, so a test can tell a
// replayed result from a processor that ran again.
type countingProcessor struct {
	processor.Processor
	runs atomic.Int64
}

func (c *countingProcessor) Process(ctx context.Context, in processor.Input, emit processor.Emit) (processor.Output, error) {
	c.runs.Add(1)
	return c.Processor.Process(ctx, in, emit)
}

// testServer is a chatd API served over real HTTP on loopback.
type testServer struct {
	*httptest.Server
	store api.Store
	echo  *countingProcessor
	v     *openapitest.Validator
}

type serverSettings struct {
	kind   storeKind
	store  api.Store
	auth   api.Authenticator
	config api.Config
	turns  turn.Config
	relay  turn.Relay
	extra  map[string]processor.Processor
	// deps, when set, adjusts the server's dependencies last.
	deps func(*api.Deps)
}

// serverOption adjusts a test server.
type serverOption func(*serverSettings)

// withStoreKind serves from a fresh store of kind.
func withStoreKind(kind storeKind) serverOption {
	return func(s *serverSettings) { s.kind = kind }
}

// withStore serves from st, which the caller owns (two servers on one store
// or one Redis).
func withStore(st api.Store) serverOption {
	return func(s *serverSettings) { s.store = st }
}

// withDeps adjusts the server's dependencies (rate limiters, …).
func withDeps(fn func(*api.Deps)) serverOption {
	return func(s *serverSettings) { s.deps = fn }
}

// withAuth replaces the principal-header authentication.
func withAuth(a api.Authenticator) serverOption {
	return func(s *serverSettings) { s.auth = a }
}

// withProcessor registers p as name beside echo and demo.
func withProcessor(name string, p processor.Processor) serverOption {
	return func(s *serverSettings) {
		if s.extra == nil {
			s.extra = map[string]processor.Processor{}
		}
		s.extra[name] = p
	}
}

// withConfig changes the API configuration, which starts from the defaults.
func withConfig(fn func(*api.Config)) serverOption {
	return func(s *serverSettings) { fn(&s.config) }
}

// withRelay carries stops through relay, shared with other servers; a
// server on a Redis store uses the store's relay unless told otherwise.
func withRelay(relay turn.Relay) serverOption {
	return func(s *serverSettings) { s.relay = relay }
}

// withTurnConfig changes the turn engine's configuration, which starts
// from the defaults.
func withTurnConfig(fn func(*turn.Config)) serverOption {
	return func(s *serverSettings) { fn(&s.turns) }
}

// newTestServer starts a chatd API with the echo and demo processors (demo
// streaming without pauses), authenticating by principal header, on the
// memory store unless an option says otherwise.
func newTestServer(tb testing.TB, opts ...serverOption) *testServer {
	tb.Helper()
	set := serverSettings{
		kind:   memoryStore,
		auth:   api.HeaderAuth{Header: principalHeader},
		config: api.DefaultConfig,
		turns:  turn.DefaultConfig,
	}
	for _, opt := range opts {
		opt(&set)
	}
	if set.store == nil {
		set.store = newTestStore(tb, set.kind)
	}
	counting := &countingProcessor{Processor: echo.New()}
	procs := map[string]processor.Processor{
		"echo": counting,
		"demo": demo.NewWithDelay(0),
	}
	maps.Copy(procs, set.extra)
	reg, err := processor.NewRegistry(procs, "demo")
	require.NoError(tb, err)
	if r, ok := set.store.(interface{ Relay() *store.RedisRelay }); ok && set.relay == nil {
		set.relay = r.Relay()
	}
	deps := newTestDeps(set.store, reg, set.turns, set.relay)
	deps.Auth, deps.Config = set.auth, set.config
	if set.deps != nil {
		set.deps(&deps)
	}
	srv := api.NewServer(deps)
	hs := httptest.NewServer(srv)
	// Turns whose client left still run in their handlers; Close waits for
	// them before the store they write to is closed.
	tb.Cleanup(hs.Close)
	return &testServer{Server: hs, store: set.store, echo: counting, v: openapitest.New(tb)}
}

// testRequest is one HTTP request to a test server.
type testRequest struct {
	method string
	path   string
	as     string // principal; nobody sends no header
	body   []byte
	// contentType defaults to application/json when there is a body;
	// noContentType sends none at all.
	contentType   string
	noContentType bool
	header        http.Header
}

// testResponse is a response whose body has been read and validated.
type testResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

func (ts *testServer) newRequest(tb testing.TB, ctx context.Context, r testRequest) *http.Request {
	tb.Helper()
	var body io.Reader = http.NoBody
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, ts.URL+r.path, body)
	require.NoError(tb, err)
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.as != nobody {
		req.Header.Set(principalHeader, r.as)
	}
	switch {
	case r.noContentType:
	case r.contentType != "":
		req.Header.Set("Content-Type", r.contentType)
	case r.body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// do sends r and returns the response, checked against openapi.yaml.
func (ts *testServer) do(tb testing.TB, r testRequest) *testResponse {
	tb.Helper()
	resp, err := ts.Client().Do(ts.newRequest(tb, context.Background(), r))
	require.NoError(tb, err)
	body := ts.v.Check(tb, resp)
	return &testResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// mustJSON encodes v; strings and byte slices are sent as they are, so
// tests can send malformed bodies.
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	switch v := v.(type) {
	case string:
		return []byte(v)
	case []byte:
		return v
	}
	data, err := json.Marshal(v)
	require.NoError(tb, err)
	return data
}

func mustDecode[T any](tb testing.TB, data []byte) T {
	tb.Helper()
	var v T
	require.NoError(tb, json.Unmarshal(data, &v), "body: %s", data)
	return v
}

// Wire shapes, decoded independently of the server's own types so that the
// tests check what clients see.

type wireMessage struct {
	ID            string           `json:"id"`
	Role          string           `json:"role"`
	Message       string           `json:"message"`
	Timestamp     time.Time        `json:"timestamp"`
	ContentBlocks []map[string]any `json:"content_blocks"`
	Meta          map[string]any   `json:"_meta"`
}

type wireElicitation struct {
	Message         string         `json:"message"`
	RequestedSchema map[string]any `json:"requestedSchema"`
	Meta            map[string]any `json:"_meta"`
}

// id is the elicitation's ID, as chatd puts it in _meta.
func (e *wireElicitation) id() string {
	if e == nil {
		return ""
	}
	id, _ := e.Meta["drupal.org/ai.elicitation_id"].(string)
	return id
}

type wireTurnResult struct {
	ThreadID           string      `json:"thread_id"`
	TurnID             string      `json:"turn_id"`
	Status             string      `json:"status"`
	UserMessage        wireMessage `json:"user_message"`
	Message            wireMessage `json:"message"`
	StructuredResponse struct {
		ContentBlocks []map[string]any `json:"content_blocks"`
		Meta          map[string]any   `json:"_meta"`
	} `json:"structured_response"`
	Elicitation          *wireElicitation `json:"elicitation"`
	ElicitationExpiresAt *time.Time       `json:"elicitation_expires_at"`
}

type wireThread struct {
	ID          string            `json:"id"`
	Processor   string            `json:"processor"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	Title       *string           `json:"title"`
	Metadata    map[string]string `json:"metadata"`
	RunningTurn *struct {
		ID        string    `json:"id"`
		StartedAt time.Time `json:"started_at"`
	} `json:"running_turn"`
	PendingElicitation *wireElicitation `json:"pending_elicitation"`
	PendingExpiresAt   *time.Time       `json:"pending_expires_at"`
}

type wirePage struct {
	Messages   []wireMessage `json:"messages"`
	NextBefore *string       `json:"next_before"`
}

type wireFieldError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

type wireProblem struct {
	Type                 string           `json:"type"`
	Title                string           `json:"title"`
	Status               int              `json:"status"`
	Detail               string           `json:"detail"`
	Code                 string           `json:"code"`
	Errors               []wireFieldError `json:"errors"`
	Elicitation          *wireElicitation `json:"elicitation"`
	ElicitationExpiresAt *time.Time       `json:"elicitation_expires_at"`
}

// fields lists the problem's error fields.
func (p wireProblem) fields() []string {
	out := make([]string, len(p.Errors))
	for i, e := range p.Errors {
		out[i] = e.Field
	}
	return out
}

// mustProblem asserts resp is a problem+json with status and code.
func mustProblem(tb testing.TB, resp *testResponse, status int, code string) wireProblem {
	tb.Helper()
	require.Equal(tb, status, resp.Status, "body: %s", resp.Body)
	assert.Equal(tb, "application/problem+json", resp.Header.Get("Content-Type"))
	p := mustDecode[wireProblem](tb, resp.Body)
	assert.Equal(tb, code, p.Code, "body: %s", resp.Body)
	assert.Equal(tb, status, p.Status)
	return p
}

// mustStatus requires resp to have status.
func mustStatus(tb testing.TB, resp *testResponse, status int) {
	tb.Helper()
	require.Equal(tb, status, resp.Status, "body: %s", resp.Body)
}

// mustCreateThread creates a thread for principal bound to proc.
func (ts *testServer) mustCreateThread(tb testing.TB, as, proc string) string {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodPost, path: "/v1/threads", as: as,
		body: mustJSON(tb, map[string]string{"processor": proc})})
	mustStatus(tb, resp, http.StatusCreated)
	th := mustDecode[wireThread](tb, resp.Body)
	require.Equal(tb, proc, th.Processor)
	require.Equal(tb, "/v1/threads/"+th.ID, resp.Header.Get("Location"))
	return th.ID
}

func turnPath(threadID string) string { return "/v1/threads/" + threadID + "/turns" }

func cancelPath(threadID string) string { return "/v1/threads/" + threadID + "/cancel" }

func answerPath(threadID, elicitationID string) string {
	return "/v1/threads/" + threadID + "/elicitations/" + elicitationID
}

// postTurn posts a plain text turn.
func (ts *testServer) postTurn(tb testing.TB, as, threadID, message string) *testResponse {
	tb.Helper()
	return ts.do(tb, testRequest{method: http.MethodPost, path: turnPath(threadID), as: as,
		body: mustJSON(tb, map[string]string{"message": message})})
}

// mustTurn posts a turn that must succeed.
func (ts *testServer) mustTurn(tb testing.TB, as, threadID, message string) wireTurnResult {
	tb.Helper()
	resp := ts.postTurn(tb, as, threadID, message)
	mustStatus(tb, resp, http.StatusOK)
	return mustDecode[wireTurnResult](tb, resp.Body)
}

// mustPause posts a turn that must end waiting for an elicitation.
func (ts *testServer) mustPause(tb testing.TB, as, threadID, message string) wireTurnResult {
	tb.Helper()
	res := ts.mustTurn(tb, as, threadID, message)
	require.Equal(tb, "input_required", res.Status)
	require.NotNil(tb, res.Elicitation)
	require.NotEmpty(tb, res.Elicitation.id())
	return res
}

// answer posts an elicitation result (any JSON-encodable value or raw text).
func (ts *testServer) answer(tb testing.TB, as, threadID, elicitationID string, result any) *testResponse {
	tb.Helper()
	return ts.do(tb, testRequest{method: http.MethodPost, path: answerPath(threadID, elicitationID), as: as,
		body: mustJSON(tb, result)})
}

// mustAnswer posts an elicitation result that must be accepted.
func (ts *testServer) mustAnswer(tb testing.TB, as, threadID, elicitationID string, result any) wireTurnResult {
	tb.Helper()
	resp := ts.answer(tb, as, threadID, elicitationID, result)
	mustStatus(tb, resp, http.StatusOK)
	return mustDecode[wireTurnResult](tb, resp.Body)
}

// mustThread fetches a thread.
func (ts *testServer) mustThread(tb testing.TB, as, threadID string) wireThread {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/v1/threads/" + threadID, as: as})
	mustStatus(tb, resp, http.StatusOK)
	return mustDecode[wireThread](tb, resp.Body)
}

// mustThreadRaw fetches a thread's JSON as served, to compare snapshots.
func (ts *testServer) mustThreadRaw(tb testing.TB, as, threadID string) []byte {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/v1/threads/" + threadID, as: as})
	mustStatus(tb, resp, http.StatusOK)
	return resp.Body
}

// mustHistory fetches a thread's whole history (up to one full page).
func (ts *testServer) mustHistory(tb testing.TB, as, threadID string) []wireMessage {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/v1/threads/" + threadID + "/messages?limit=200", as: as})
	mustStatus(tb, resp, http.StatusOK)
	page := mustDecode[wirePage](tb, resp.Body)
	require.Nil(tb, page.NextBefore, "history longer than one page")
	return page.Messages
}

// mustHistoryRaw fetches the history JSON as served, to compare snapshots.
func (ts *testServer) mustHistoryRaw(tb testing.TB, as, threadID string) []byte {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/v1/threads/" + threadID + "/messages?limit=200", as: as})
	mustStatus(tb, resp, http.StatusOK)
	return resp.Body
}

// waitFor polls cond until it holds, failing tb after waitTimeout.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireUUID requires s to be a canonical UUID.
func requireUUID(tb testing.TB, s string) {
	tb.Helper()
	u, err := uuid.Parse(s)
	require.NoError(tb, err, "%q is not a UUID", s)
	require.Equal(tb, u.String(), s, "not canonical")
}

// Server-Sent Events.

// sseEvent is one event of a stream, or a comment line when comment is set.
type sseEvent struct {
	id      string
	event   string
	data    []byte
	comment string
}

// sseStream is a streaming response being read event by event.
type sseStream struct {
	tb     testing.TB
	resp   *http.Response
	r      *bufio.Reader
	v      *openapitest.Validator
	cancel context.CancelFunc
}

// openStream sends r asking for Server-Sent Events. A stream (200
// text/event-stream) is returned for reading; any other response is read,
// validated and returned as resp.
func (ts *testServer) openStream(tb testing.TB, r testRequest) (*sseStream, *testResponse) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set("Accept", "text/event-stream")
	req := ts.newRequest(tb, ctx, r)
	resp, err := ts.Client().Do(req)
	if err != nil {
		cancel()
		require.NoError(tb, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer cancel()
		body := ts.v.Check(tb, resp)
		return nil, &testResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}
	}
	// The body of a stream is checked event by event as it is read.
	ts.v.ValidateResponse(tb, req, resp.StatusCode, resp.Header, nil)
	st := &sseStream{tb: tb, resp: resp, r: bufio.NewReader(resp.Body), v: ts.v, cancel: cancel}
	tb.Cleanup(st.close)
	return st, nil
}

// mustStream opens a stream that must start.
func (ts *testServer) mustStream(tb testing.TB, r testRequest) *sseStream {
	tb.Helper()
	st, resp := ts.openStream(tb, r)
	if st == nil {
		tb.Fatalf("want a stream, got %d: %s", resp.Status, resp.Body)
	}
	return st
}

// streamTurn opens a streamed plain turn that must start.
func (ts *testServer) streamTurn(tb testing.TB, as, threadID, message string) *sseStream {
	tb.Helper()
	return ts.mustStream(tb, testRequest{method: http.MethodPost, path: turnPath(threadID), as: as,
		body: mustJSON(tb, map[string]string{"message": message})})
}

// close disconnects from the server.
func (st *sseStream) close() {
	st.cancel()
	_ = st.resp.Body.Close()
}

// next returns the next event or comment; io.EOF when the stream ended.
// Every event's data is checked against its schema in openapi.yaml.
func (st *sseStream) next() (sseEvent, error) {
	st.tb.Helper()
	var ev sseEvent
	started := false
	for {
		line, err := st.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && started {
				return sseEvent{}, fmt.Errorf("stream ended inside an event: %w", io.ErrUnexpectedEOF)
			}
			return sseEvent{}, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if !started {
				continue
			}
			if ev.comment == "" {
				st.v.ValidateEvent(st.tb, ev.event, ev.data)
			}
			return ev, nil
		case strings.HasPrefix(line, ":"):
			if !started {
				ev.comment = strings.TrimSpace(strings.TrimPrefix(line, ":"))
				started = true
			}
		default:
			started = true
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.id = value
			case "event":
				ev.event = value
			case "data":
				if ev.data != nil {
					ev.data = append(ev.data, '\n')
				}
				ev.data = append(ev.data, value...)
			default:
				st.tb.Errorf("unexpected SSE field %q", field)
			}
		}
	}
}

// nextEvent returns the next event, skipping comments.
func (st *sseStream) nextEvent() sseEvent {
	st.tb.Helper()
	for {
		ev, err := st.next()
		require.NoError(st.tb, err)
		if ev.comment == "" {
			return ev
		}
	}
}

// readAll reads the stream to its end, comments included.
func (st *sseStream) readAll() []sseEvent {
	st.tb.Helper()
	var out []sseEvent
	for {
		ev, err := st.next()
		if err == io.EOF {
			return out
		}
		require.NoError(st.tb, err)
		out = append(out, ev)
	}
}

// eventsOnly drops comments.
func eventsOnly(all []sseEvent) []sseEvent {
	var out []sseEvent
	for _, ev := range all {
		if ev.comment == "" {
			out = append(out, ev)
		}
	}
	return out
}

// eventNames lists the events' names in order.
func eventNames(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.event
	}
	return out
}

// newTestDeps are a server's dependencies over st: its metrics, and a turn
// engine over st that reports to them and carries stops through relay
// (nil: this server's turns only).
func newTestDeps(st api.Store, reg *processor.Registry, cfg turn.Config, relay turn.Relay) api.Deps {
	metrics := api.NewMetrics()
	engine := turn.New(turn.Deps{Store: st, Processors: reg, Observer: metrics, Config: cfg, Relay: relay})
	return api.Deps{Store: st, Engine: engine, Processors: reg, Metrics: metrics, Config: api.DefaultConfig}
}
