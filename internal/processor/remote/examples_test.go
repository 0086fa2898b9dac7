package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/processor/agent"
	"chatd/internal/processor/remote"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// examplesDir holds the example processors, each with the agents file that
// serves it.
const examplesDir = "../../../examples/processors"

// exampleSecret is the secret the examples run with, as PROCESSOR_SECRET
// for both chatd (secret_env) and the processor.
const exampleSecret = "example-test-secret"

// example is one example processor: how to start it on a port.
type example struct {
	name    string
	bin     string
	command func(port int) []string
}

var examples = []example{
	{"php", "php", func(port int) []string { return []string{"-S", "127.0.0.1:" + strconv.Itoa(port), "index.php"} }},
	{"node", "node", func(int) []string { return []string{"server.js"} }},
}

// mustInterpreter returns the example's interpreter, skipping the test when
// there is none — or failing it under CI=true or CHATD_FRONTEND_TESTS=1, as
// make test runs, where a missing interpreter is a broken set-up.
func mustInterpreter(tb testing.TB, ex example) string {
	tb.Helper()
	path, err := exec.LookPath(ex.bin)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" || os.Getenv("CHATD_FRONTEND_TESTS") == "1" {
		tb.Fatalf("%s is missing (scripts/ensure-php.sh installs PHP): %v", ex.bin, err)
	}
	tb.Skipf("%s is missing: %v (set CI=true to make this a failure)", ex.bin, err)
	return ""
}

// freePort returns a loopback port that is free now, for an example to
// bind after this returns. It is taken below the kernel's ephemeral range
// (32768 and up by default), so no other process's bind to port 0 or
// outgoing connection takes it in between — on a busy machine one did, and
// an example then failed to bind while the readiness check reached the
// other process. Ports handed out are never handed out again.
func freePort(tb testing.TB) int {
	tb.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if portsTaken[port] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		require.NoError(tb, ln.Close())
		portsTaken[port] = true
		return port
	}
	tb.Fatal("no free loopback port in 20000–31999")
	return 0
}

var (
	portsMu    sync.Mutex
	portsTaken = map[int]bool{}
)

// startExample starts the example processor on a free loopback port,
// stopped when tb ends, and returns its URL once it accepts connections.
func startExample(tb testing.TB, ex example) string {
	tb.Helper()
	bin := mustInterpreter(tb, ex)
	port := freePort(tb)
	cmd := exec.Command(bin, ex.command(port)...)
	cmd.Dir = filepath.Join(examplesDir, ex.name)
	cmd.Env = append(os.Environ(), "PROCESSOR_SECRET="+exampleSecret, "PORT="+strconv.Itoa(port), "HOST=127.0.0.1")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(tb, cmd.Start())
	// exited is closed once the process has ended, with waitErr set: a
	// channel read once would leave the cleanup's wait blocked.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			select {
			case <-exited:
				tb.Fatalf("%s exited (%v), yet %s accepted a connection: another process holds the port\n%s", ex.name, waitErr, addr, logs.String())
			default:
			}
			return "http://" + addr + "/"
		}
		select {
		case <-exited:
			tb.Fatalf("%s exited before it listened: %v\n%s", ex.name, waitErr, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not listen on %s within 10s:\n%s", ex.name, addr, logs.String())
		}
	}
}

// schemaProxy stands between chatd and a processor and holds both sides to
// the protocol's schema: each request, and each answer as it streams
// through (lines are passed on as they come, so streaming still shows).
func schemaProxy(tb testing.TB, target string) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(tb, err)
		mustMatchSchema(tb, "request", body)
		out, err := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
		require.NoError(tb, err)
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		var answer bytes.Buffer
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			answer.Write(buf[:n])
			_, _ = w.Write(buf[:n])
			w.(http.Flusher).Flush()
			if err != nil {
				break
			}
		}
		if resp.StatusCode == http.StatusOK {
			mustMatchAnswer(tb, resp.Header.Get("Content-Type"), answer.Bytes())
		}
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/"
}

// exampleProcessor is the remote processor the example's own agents file
// describes, pointed at url instead of the port the file names.
func exampleProcessor(tb testing.TB, ex example, url string) (string, processor.Processor) {
	tb.Helper()
	f, err := agent.LoadFile(filepath.Join(examplesDir, ex.name, "agents.yaml"), func(name string) string {
		return map[string]string{"PROCESSOR_SECRET": exampleSecret}[name]
	})
	require.NoError(tb, err)
	require.Len(tb, f.RemoteProcessors, 1)
	cfg := f.RemoteProcessors[0].Config
	cfg.URL = url
	return cfg.Name, mustRemote(tb, cfg)
}

// TestExamples runs each example processor against two chatd instances on
// one Redis: a greeting (streamed, for the deltas), an entity card, and a
// form asked on one instance and answered on the other.
func TestExamples(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			base := startExample(t, ex)
			name, proc := exampleProcessor(t, ex, schemaProxy(t, base))
			redis := redistest.Start(t)
			procs := map[string]processor.Processor{name: proc}
			one := newChatd(t, mustRedisStore(t, redis.URL()), procs, turn.DefaultConfig)
			other := newChatd(t, mustRedisStore(t, redis.URL()), procs, turn.DefaultConfig)
			thread := one.mustThread(t, name)

			greeting := one.mustTurn(t, thread, "hello there")
			assert.Equal(t, "Hello, alice! You said: hello there", greeting.Message.Text)
			assert.Equal(t, []any{"card 42", "form"}, greeting.Message.Meta["drupal.org/ai.suggested_replies"])
			deltas, streamed := one.mustStream(t, thread, "hello again, friend")
			assert.Equal(t, "Hello, alice! You said: hello again, friend", streamed.Message.Text)
			assert.Equal(t, streamed.Message.Text, strings.Join(deltas, ""), "the deltas make up the text")

			card := other.mustTurn(t, thread, "card 42")
			assert.Equal(t, "Here is article 42.", card.Message.Text)
			require.Len(t, card.Message.ContentBlocks, 1)
			block := card.Message.ContentBlocks[0]
			assert.Equal(t, "resource_link", block["type"])
			assert.Equal(t, "entity:node/42", block["uri"])
			entity, _ := block["_meta"].(map[string]any)["drupal.org/ai.entity"].(map[string]any)
			assert.Equal(t, "node", entity["entity_type"])
			assert.Equal(t, "42", entity["id"])
			assert.Equal(t, "teaser", entity["view_mode"])
			assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, entity["uuid"])

			paused := one.mustTurn(t, thread, "form")
			require.Equal(t, "input_required", paused.Status)
			assert.Equal(t, "I need a few details first.", paused.Message.Text)
			assert.Equal(t, "Who should we reply to?", paused.Elicitation.Message)
			assert.Equal(t, []any{"name", "email"}, paused.Elicitation.RequestedSchema["required"])
			status, body := other.do(t, http.MethodPost, "/v1/threads/"+thread+"/elicitations/"+paused.elicitationID(),
				map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}})
			require.Equal(t, http.StatusUnprocessableEntity, status, "chatd checks the answer before the processor sees it: %s", body)
			resumed := other.mustAnswer(t, thread, paused.elicitationID(),
				map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "email": "ada@example.com", "topic": "technical"}})
			assert.Equal(t, "completed", resumed.Status)
			assert.Equal(t, "Thanks, Ada! We will write to ada@example.com about technical.", resumed.Message.Text)

			again := other.mustTurn(t, thread, "form")
			declined := one.mustAnswer(t, thread, again.elicitationID(), map[string]any{"action": "decline"})
			assert.Equal(t, "No problem: nothing was sent.", declined.Message.Text)
		})
	}
}

// TestExamplesRefuseBadSignatures: each example checks the signature over
// the exact bytes, and refuses an unsigned request, a forged one and one
// whose body changed after signing.
func TestExamplesRefuseBadSignatures(t *testing.T) {
	body := []byte(`{"thread_id":"0190a5c4-0000-7000-8000-000000000000","turn_id":"0190a5c4-0000-7000-8000-000000000001","processor":"x","principal":"eve",` +
		`"message":{"id":"0190a5c4-0000-7000-8000-000000000002","role":"user","message":"hello","timestamp":"2026-01-01T00:00:00.000Z"},"history":[],"resume":null}`)
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			base := startExample(t, ex)
			post := func(sig string, body []byte) (int, string, []byte) {
				req, err := http.NewRequest(http.MethodPost, base, bytes.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				if sig != "" {
					req.Header.Set("Chatd-Signature", sig)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				data, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header.Get("Content-Type"), data
			}
			status, _, answer := post(remote.Sign([]byte(exampleSecret), time.Now(), body), body)
			require.Equal(t, http.StatusOK, status, "%s", answer)
			for name, tc := range map[string]struct {
				sig  string
				body []byte
			}{
				"unsigned":     {"", body},
				"wrong secret": {remote.Sign([]byte("guess"), time.Now(), body), body},
				"changed body": {remote.Sign([]byte(exampleSecret), time.Now(), body), append(bytes.Clone(body), ' ')},
				"an hour ago":  {remote.Sign([]byte(exampleSecret), time.Now().Add(-time.Hour), body), body},
				"malformed":    {"v1=00,t=1", body},
			} {
				status, contentType, data := post(tc.sig, tc.body)
				assert.Equal(t, http.StatusUnauthorized, status, "%s: %s", name, data)
				assert.Equal(t, "application/problem+json", contentType, name)
				assert.Contains(t, string(data), "signature", name)
			}
		})
	}
}

func mustRedisStore(tb testing.TB, url string) api.Store {
	tb.Helper()
	st, err := store.OpenRedis(url, testStoreOpts)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// mustStream runs a streamed turn and returns its deltas and result.
func (c *chatd) mustStream(tb testing.TB, thread, text string) ([]string, turnResult) {
	tb.Helper()
	data, err := json.Marshal(map[string]string{"message": text})
	require.NoError(tb, err)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, c.URL+"/v1/threads/"+thread+"/turns", bytes.NewReader(data))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Chatd-Principal", "alice")
	resp, err := c.Client().Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	require.Equal(tb, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	var deltas []string
	var result turnResult
	for _, ev := range strings.Split(string(raw), "\n\n") {
		var name, payload string
		for _, line := range strings.Split(ev, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				payload = v
			}
		}
		if name == "" {
			continue // a heartbeat, or the end
		}
		c.v.ValidateEvent(tb, name, []byte(payload))
		switch name {
		case "text.delta":
			var d struct {
				Delta string `json:"delta"`
			}
			require.NoError(tb, json.Unmarshal([]byte(payload), &d))
			deltas = append(deltas, d.Delta)
		case "turn.completed":
			require.NoError(tb, json.Unmarshal([]byte(payload), &result))
		case "error":
			tb.Fatalf("the stream failed: %s", payload)
		}
	}
	return deltas, result
}
