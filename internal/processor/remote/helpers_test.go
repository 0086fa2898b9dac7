package remote_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/openapitest"
	"chatd/internal/processor"
	"chatd/internal/processor/echo"
	"chatd/internal/processor/remote"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// schemaFile is the protocol's JSON Schema: the tests hold every request
// chatd sends and every answer they make a processor give to it.
const schemaFile = "../../../docs/remote-processor.schema.json"

var schemas struct {
	once sync.Once
	c    *jsonschema.Compiler
	err  error
	mu   sync.Mutex
	defs map[string]*jsonschema.Schema
}

// mustSchema returns the schema of one definition of schemaFile ("request",
// "answer", "line").
func mustSchema(tb testing.TB, def string) *jsonschema.Schema {
	tb.Helper()
	schemas.once.Do(func() {
		f, err := os.Open(schemaFile)
		if err != nil {
			schemas.err = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schemas.err = err
			return
		}
		schemas.c = jsonschema.NewCompiler()
		schemas.c.DefaultDraft(jsonschema.Draft2020)
		schemas.c.AssertFormat()
		schemas.err = schemas.c.AddResource("remote-processor.schema.json", doc)
		schemas.defs = map[string]*jsonschema.Schema{}
	})
	require.NoError(tb, schemas.err)
	schemas.mu.Lock()
	defer schemas.mu.Unlock()
	if s, ok := schemas.defs[def]; ok {
		return s
	}
	s, err := schemas.c.Compile("remote-processor.schema.json#/$defs/" + def)
	require.NoError(tb, err)
	schemas.defs[def] = s
	return s
}

// mustMatchSchema requires data, one JSON document, to be valid against
// the schema's definition def.
func mustMatchSchema(tb testing.TB, def string, data []byte) {
	tb.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(tb, err, "%s", data)
	require.NoError(tb, mustSchema(tb, def).Validate(inst), "%s: %s", def, data)
}

// mustMatchAnswer requires an answer body of the given content type to
// match the schema: the JSON document, or each non-blank NDJSON line.
func mustMatchAnswer(tb testing.TB, contentType string, body []byte) {
	tb.Helper()
	if !strings.HasPrefix(contentType, "application/x-ndjson") {
		mustMatchSchema(tb, "answer", body)
		return
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			mustMatchSchema(tb, "line", line)
		}
	}
}

// verifySignature checks a Chatd-Signature header over the raw body, the
// way a processor would: recomputed, compared in constant time, and the
// time within five minutes.
func verifySignature(secret, header string, body []byte, now time.Time) error {
	ts, mac, ok := strings.Cut(strings.TrimPrefix(header, "t="), ",v1=")
	if !strings.HasPrefix(header, "t=") || !ok {
		return fmt.Errorf("malformed signature header %q", header)
	}
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts + "."))
	h.Write(body)
	if !hmac.Equal([]byte(mac), []byte(hex.EncodeToString(h.Sum(nil)))) {
		return fmt.Errorf("signature %q does not match the body", header)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("signature time %q is not now", ts)
	}
	return nil
}

// exchange is one request a fake remote processor received.
type exchange struct {
	header http.Header
	body   []byte
}

// fakeRemote is a remote processor on loopback whose answers a test
// scripts; it records what it was sent and checks every request against
// the schema and, when it has a secret, its signature.
type fakeRemote struct {
	*httptest.Server
	tb     testing.TB
	secret string
	answer func(w http.ResponseWriter, r *http.Request, req wireRequest)
	mu     sync.Mutex
	got    []exchange
}

func newFakeRemote(tb testing.TB, secret string, answer func(w http.ResponseWriter, r *http.Request, req wireRequest)) *fakeRemote {
	tb.Helper()
	f := &fakeRemote{tb: tb, secret: secret, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.Close)
	return f
}

func (f *fakeRemote) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.got = append(f.got, exchange{header: r.Header.Clone(), body: body})
	f.mu.Unlock()
	mustMatchSchema(f.tb, "request", body)
	sig := r.Header.Get("Chatd-Signature")
	switch {
	case f.secret == "" && sig != "":
		f.tb.Errorf("a request signed without a secret: %q", sig)
	case f.secret != "":
		if err := verifySignature(f.secret, sig, body, time.Now()); err != nil {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"title":%q}`, err.Error())
			return
		}
	}
	var req wireRequest
	require.NoError(f.tb, json.Unmarshal(body, &req))
	f.answer(w, r, req)
}

// received returns the requests so far.
func (f *fakeRemote) received() []exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]exchange(nil), f.got...)
}

// wireRequest is a request as a processor reads it, decoded independently
// of the package's own types.
type wireRequest struct {
	ThreadID  string        `json:"thread_id"`
	TurnID    string        `json:"turn_id"`
	Processor string        `json:"processor"`
	Principal string        `json:"principal"`
	Message   wireMessage   `json:"message"`
	History   []wireMessage `json:"history"`
	Resume    *wireResume   `json:"resume"`
}

type wireMessage struct {
	ID            string           `json:"id"`
	Role          string           `json:"role"`
	Text          string           `json:"message"`
	Timestamp     string           `json:"timestamp"`
	ContentBlocks []map[string]any `json:"content_blocks"`
	Meta          map[string]any   `json:"_meta"`
}

type wireResume struct {
	ElicitationID string          `json:"elicitation_id"`
	State         json.RawMessage `json:"state"`
	Result        struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
		Meta    map[string]any `json:"_meta"`
	} `json:"result"`
}

// answerJSON writes a JSON answer after checking it against the schema:
// the tests answer only what the protocol allows, unless they mean not to.
func answerJSON(tb testing.TB, w http.ResponseWriter, answer string) {
	tb.Helper()
	mustMatchSchema(tb, "answer", []byte(answer))
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, answer)
}

// newChatd serves chatd's API over real HTTP on st, its turns run by an
// engine configured by cfg, the principal taken from X-Chatd-Principal.
func newChatd(tb testing.TB, st api.Store, procs map[string]processor.Processor, cfg turn.Config) *chatd {
	tb.Helper()
	all := map[string]processor.Processor{"echo": echo.New()}
	for name, p := range procs {
		all[name] = p
	}
	reg, err := processor.NewRegistry(all, "echo")
	require.NoError(tb, err)
	metrics := api.NewMetrics()
	engine := turn.New(turn.Deps{Store: st, Processors: reg, Observer: metrics, Config: cfg})
	srv := httptest.NewServer(api.NewServer(api.Deps{Store: st, Engine: engine, Processors: reg,
		Auth: api.HeaderAuth{Header: "X-Chatd-Principal"}, Metrics: metrics, Config: api.DefaultConfig}))
	tb.Cleanup(srv.Close)
	return &chatd{Server: srv, v: openapitest.New(tb)}
}

var testStoreOpts = store.Options{ThreadTTL: time.Hour, HistoryMax: 1000, IdempotencyTTL: time.Hour}

func newMemoryStore(tb testing.TB) api.Store {
	tb.Helper()
	st := store.NewMemory(testStoreOpts)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

func mustRemote(tb testing.TB, cfg remote.Config) *remote.Processor {
	tb.Helper()
	p, err := remote.New(cfg)
	require.NoError(tb, err)
	return p
}

// chatd is a chatd API on loopback.
type chatd struct {
	*httptest.Server
	v *openapitest.Validator
}

// do sends a JSON request as alice and returns the status and the body,
// checked against openapi.yaml.
func (c *chatd) do(tb testing.TB, method, path string, body any) (int, []byte) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(tb, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	require.NoError(tb, err)
	req.Header.Set("X-Chatd-Principal", "alice")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Client().Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	return resp.StatusCode, c.v.Check(tb, resp)
}

func (c *chatd) mustThread(tb testing.TB, proc string) string {
	tb.Helper()
	status, body := c.do(tb, http.MethodPost, "/v1/threads", map[string]string{"processor": proc})
	require.Equal(tb, http.StatusCreated, status, "%s", body)
	var th struct {
		ID string `json:"id"`
	}
	require.NoError(tb, json.Unmarshal(body, &th))
	return th.ID
}

// turnResult is the part of a TurnResult these tests read.
type turnResult struct {
	TurnID      string      `json:"turn_id"`
	Status      string      `json:"status"`
	UserMessage wireMessage `json:"user_message"`
	Message     wireMessage `json:"message"`
	Elicitation *struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
		Meta            map[string]any `json:"_meta"`
	} `json:"elicitation"`
}

func (r turnResult) elicitationID() string {
	if r.Elicitation == nil {
		return ""
	}
	id, _ := r.Elicitation.Meta["drupal.org/ai.elicitation_id"].(string)
	return id
}

func (c *chatd) mustTurn(tb testing.TB, thread, text string) turnResult {
	tb.Helper()
	status, body := c.do(tb, http.MethodPost, "/v1/threads/"+thread+"/turns", map[string]string{"message": text})
	require.Equal(tb, http.StatusOK, status, "%s", body)
	var r turnResult
	require.NoError(tb, json.Unmarshal(body, &r))
	return r
}

func (c *chatd) mustAnswer(tb testing.TB, thread, id string, result any) turnResult {
	tb.Helper()
	status, body := c.do(tb, http.MethodPost, "/v1/threads/"+thread+"/elicitations/"+id, result)
	require.Equal(tb, http.StatusOK, status, "%s", body)
	var r turnResult
	require.NoError(tb, json.Unmarshal(body, &r))
	return r
}

func jsonschemaUnmarshal(doc string) (any, error) {
	return jsonschema.UnmarshalJSON(strings.NewReader(doc))
}
