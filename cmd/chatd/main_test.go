package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"chatd/internal/openapitest"
	"chatd/internal/redistest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer collects run's logs while it writes them from other goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	addr := ln.Addr().String()
	require.NoError(tb, ln.Close())
	return addr
}

// startRun runs chatd's real run with env and waits until /readyz answers
// 200. The returned stop cancels run and returns its error.
func startRun(tb testing.TB, env map[string]string) (base string, stop func() error, logs *syncBuffer) {
	tb.Helper()
	addr := freeAddr(tb)
	tb.Setenv("CHATD_ADDR", addr)
	for k, v := range env {
		tb.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs = &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, logs) }()
	base = "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			cancel()
			tb.Fatalf("run exited before it was ready: %v\nlogs:\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			tb.Fatalf("chatd not ready within 10s; logs:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = context.DeadlineExceeded
			}
		})
		return runErr
	}
	tb.Cleanup(func() { _ = stop() })
	return base, stop, logs
}

func mustDo(tb testing.TB, method, url, body string, header map[string]string) (int, map[string]any) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(tb, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	raw := openapitest.New(tb).Check(tb, resp)
	var out map[string]any
	if len(raw) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		require.NoError(tb, json.Unmarshal(raw, &out), string(raw))
	}
	return resp.StatusCode, out
}

// TestRunEndToEnd drives the real binary entry point through a form round
// trip, for the embedded store and for Redis.
func TestRunEndToEnd(t *testing.T) {
	cases := map[string]func(t *testing.T) map[string]string{
		"memory": func(*testing.T) map[string]string { return nil },
		"redis": func(t *testing.T) map[string]string {
			return map[string]string{"CHATD_REDIS_URL": redistest.Start(t).URL()}
		},
	}
	for name, envFor := range cases {
		t.Run(name, func(t *testing.T) {
			env := envFor(t)
			if env == nil {
				env = map[string]string{}
			}
			env["CHATD_PROCESSORS"] = "demo,echo"
			base, stop, logs := startRun(t, env)

			status, processors := mustDo(t, http.MethodGet, base+"/v1/processors", "", nil)
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, "demo", processors["default"])

			status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", `{"processor":"echo"}`, nil)
			require.Equal(t, http.StatusCreated, status)
			threadURL := base + "/v1/threads/" + thread["id"].(string)

			status, turn := mustDo(t, http.MethodPost, threadURL+"/turns", `{"message":"hello"}`, nil)
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, "completed", turn["status"])
			assert.Equal(t, "hello", turn["message"].(map[string]any)["message"])

			form := `{"message":"/elicit {\"message\":\"Your name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":1}},\"required\":[\"name\"]}}"}`
			status, paused := mustDo(t, http.MethodPost, threadURL+"/turns", form, nil)
			require.Equal(t, http.StatusOK, status, paused)
			require.Equal(t, "input_required", paused["status"])
			elicitationID := paused["elicitation"].(map[string]any)["_meta"].(map[string]any)["drupal.org/ai.elicitation_id"].(string)

			status, problem := mustDo(t, http.MethodPost, threadURL+"/elicitations/"+elicitationID, `{"action":"accept","content":{"name":""}}`, nil)
			require.Equal(t, http.StatusUnprocessableEntity, status)
			assert.Equal(t, "validation_failed", problem["code"])

			status, resumed := mustDo(t, http.MethodPost, threadURL+"/elicitations/"+elicitationID, `{"action":"accept","content":{"name":"Ana"}}`, nil)
			require.Equal(t, http.StatusOK, status, resumed)
			assert.Equal(t, `{"action":"accept","content":{"name":"Ana"}}`, resumed["message"].(map[string]any)["message"])

			status, page := mustDo(t, http.MethodGet, threadURL+"/messages", "", nil)
			require.Equal(t, http.StatusOK, status)
			assert.Len(t, page["messages"], 6)

			require.NoError(t, stop())
			assert.Contains(t, logs.String(), `"msg":"chatd stopped"`)
		})
	}
}

func TestRunAPIKeyMode(t *testing.T) {
	keysFile := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(keysFile, []byte("# principals\nbob:bobs-key\n"), 0o600))
	base, _, logs := startRun(t, map[string]string{
		"CHATD_AUTH_MODE": "apikey", "CHATD_API_KEYS": "alice:alices-key", "CHATD_API_KEYS_FILE": keysFile,
	})

	status, problem := mustDo(t, http.MethodPost, base+"/v1/threads", "", nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, "unauthorized", problem["code"])

	status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", "", map[string]string{"Authorization": "Bearer alices-key"})
	require.Equal(t, http.StatusCreated, status)
	status, _ = mustDo(t, http.MethodGet, base+"/v1/threads/"+thread["id"].(string), "", map[string]string{"Authorization": "Bearer bobs-key"})
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = mustDo(t, http.MethodGet, base+"/v1/threads/"+thread["id"].(string), "", map[string]string{"Authorization": "Bearer alices-key"})
	assert.Equal(t, http.StatusOK, status)

	assert.NotContains(t, logs.String(), "alices-key", "keys are never logged")
	assert.NotContains(t, logs.String(), "bobs-key", "keys are never logged")
}

func TestConfigRefusesAnonymousOffLoopback(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"anonymous on all interfaces", map[string]string{"CHATD_ADDR": "0.0.0.0:8080"}, "refusing to serve"},
		{"anonymous allowed explicitly", map[string]string{"CHATD_ADDR": "0.0.0.0:8080", "CHATD_ALLOW_ANONYMOUS": "true"}, ""},
		{"anonymous on loopback", map[string]string{"CHATD_ADDR": "127.0.0.1:0"}, ""},
		{"anonymous on ipv6 loopback", map[string]string{"CHATD_ADDR": "[::1]:0"}, ""},
		{"apikey off loopback", map[string]string{"CHATD_ADDR": "0.0.0.0:8080", "CHATD_AUTH_MODE": "apikey", "CHATD_API_KEYS": "alice:k1"}, ""},
		{"unknown auth mode", map[string]string{"CHATD_AUTH_MODE": "magic"}, "CHATD_AUTH_MODE"},
		{"zero turn timeout", map[string]string{"CHATD_TURN_TIMEOUT": "0s"}, "CHATD_TURN_TIMEOUT"},
		{"bad log format", map[string]string{"CHATD_LOG_FORMAT": "xml"}, "CHATD_LOG_FORMAT"},
		{"bad duration", map[string]string{"CHATD_ELICITATION_TTL": "soon"}, `CHATD_ELICITATION_TTL: "soon" is not a valid duration`},
		{"bad boolean", map[string]string{"CHATD_ALLOW_ANONYMOUS": "maybe"}, `CHATD_ALLOW_ANONYMOUS: "maybe" is not a valid boolean`},
		{"address without port", map[string]string{"CHATD_ADDR": "nonsense"}, `CHATD_ADDR "nonsense": want host:port`},
		{"shutdown shorter than a turn", map[string]string{"CHATD_TURN_TIMEOUT": "90s"}, "CHATD_SHUTDOWN_TIMEOUT (1m10s) must be at least CHATD_TURN_TIMEOUT (1m30s)"},
		{"apikey without keys", map[string]string{"CHATD_AUTH_MODE": "apikey"}, "CHATD_API_KEYS or CHATD_API_KEYS_FILE"},
		{"trusted proxies", map[string]string{"CHATD_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.7,2001:db8::/32"}, ""},
		{"a trusted proxy that is no address", map[string]string{"CHATD_TRUSTED_PROXIES": "10.0.0.0/8,gateway"},
			`CHATD_TRUSTED_PROXIES: "gateway" is not an IP address or a CIDR prefix`},
		{"a trusted prefix out of range", map[string]string{"CHATD_TRUSTED_PROXIES": "10.0.0.0/33"}, `CHATD_TRUSTED_PROXIES: "10.0.0.0/33"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := loadConfig()
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestRunFailsOnBadConfiguration(t *testing.T) {
	cases := map[string]map[string]string{
		"unknown processor":       {"CHATD_PROCESSORS": "echo,oracle"},
		"default not enabled":     {"CHATD_PROCESSORS": "echo", "CHATD_DEFAULT_PROCESSOR": "demo"},
		"apikey without keys":     {"CHATD_AUTH_MODE": "apikey"},
		"malformed key entry":     {"CHATD_AUTH_MODE": "apikey", "CHATD_API_KEYS": "alice"},
		"unparseable redis url":   {"CHATD_REDIS_URL": "http://nowhere"},
		"negative wait replicas":  {"CHATD_REDIS_WAIT_REPLICAS": "-1"},
		"wait beyond read":        {"CHATD_REDIS_URL": "redis://127.0.0.1:1/0", "CHATD_REDIS_WAIT_REPLICAS": "1", "CHATD_REDIS_WAIT_TIMEOUT": "5s"},
		"unparseable log level":   {"CHATD_LOG_LEVEL": "loud"},
		"missing api keys file":   {"CHATD_AUTH_MODE": "apikey", "CHATD_API_KEYS_FILE": "/nonexistent/keys"},
		"one key, two principals": {"CHATD_AUTH_MODE": "apikey", "CHATD_API_KEYS": "alice:k1,bob:k1"},
		"javascript entity urls":  {"CHATD_ENTITY_URL_TEMPLATE": "javascript:alert('{type}/{id}')"},
		"entity url without id":   {"CHATD_ENTITY_URL_TEMPLATE": "https://site.example/{type}"},
		"entity type in host":     {"CHATD_ENTITY_URL_TEMPLATE": "https://{type}.site.example/{id}"},
		"unparseable ui switch":   {"CHATD_UI": "maybe"},
	}
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("CHATD_ADDR", freeAddr(t))
			for k, v := range env {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			assert.Error(t, run(ctx, io.Discard))
		})
	}
}

// TestRunRedactsTheRedisPassword: a malformed CHATD_REDIS_URL is reported
// with its password replaced, however the URL is wrong, and nothing chatd
// logs carries it.
func TestRunRedactsTheRedisPassword(t *testing.T) {
	for _, u := range []string{
		"redis://user:s3cret-pw@127.0.0.1:notaport",
		"redis://:s3cret-pw@[::1",
		"redis://us%zzer:s3cret-pw@127.0.0.1",
		"redis://:s3cret-pw@127.0.0.1:6379/x",
		"redis://:s3cret-pw@h1:1,h2:2?foo=bar",
		`redis://:s3cret-pw"\@127.0.0.1:notaport`,
	} {
		t.Run(u, func(t *testing.T) {
			t.Setenv("CHATD_ADDR", freeAddr(t))
			t.Setenv("CHATD_REDIS_URL", u)
			var logs syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := run(ctx, &logs)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "s3cret-pw")
			assert.NotContains(t, logs.String(), "s3cret-pw")
		})
	}
}

// TestShutdownLetsRunningStreamsFinish stops chatd while a streamed turn is
// mid-way: the stream still ends with turn.completed (sent only once the
// turn is committed), and run returns cleanly.
func TestShutdownLetsRunningStreamsFinish(t *testing.T) {
	base, stop, _ := startRun(t, map[string]string{"CHATD_PROCESSORS": "demo,echo", "CHATD_DEFAULT_PROCESSOR": "echo"})
	status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", "", nil)
	require.Equal(t, http.StatusCreated, status)
	threadURL := base + "/v1/threads/" + thread["id"].(string)

	req, err := http.NewRequest(http.MethodPost, threadURL+"/turns", strings.NewReader(`{"message":"/slow 100 one two three four five"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- name
			}
		}
	}()
	require.Equal(t, "message.start", <-events)
	require.Equal(t, "text.delta", <-events)

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	var rest []string
	for name := range events {
		rest = append(rest, name)
	}
	require.NotEmpty(t, rest)
	assert.Equal(t, "turn.completed", rest[len(rest)-1], "the stream ends with its turn, not with the shutdown")
	require.NoError(t, <-stopped)
}

// TestDefaultProcessorsAreDemoOnly: echo is a test processor and must be
// asked for by CHATD_PROCESSORS.
func TestDefaultProcessorsAreDemoOnly(t *testing.T) {
	t.Setenv("CHATD_PROCESSORS", "")
	require.NoError(t, os.Unsetenv("CHATD_PROCESSORS"))
	base, stop, _ := startRun(t, nil)
	defer func() { assert.NoError(t, stop()) }()
	status, list := mustDo(t, http.MethodGet, base+"/v1/processors", "", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "demo", list["default"])
	assert.Equal(t, []any{map[string]any{"name": "demo", "description": list["processors"].([]any)[0].(map[string]any)["description"]}}, list["processors"])
	status, _ = mustDo(t, http.MethodPost, base+"/v1/threads", `{"processor":"echo"}`, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, status)
}

// TestRunServesThePage checks CHATD_UI: the chat page at / by default, with
// entity cards linked through CHATD_ENTITY_URL_TEMPLATE, and none when off.
func TestRunServesThePage(t *testing.T) {
	t.Run("on", func(t *testing.T) {
		base, _, _ := startRun(t, map[string]string{"CHATD_ENTITY_URL_TEMPLATE": "https://site.example/{type}/{id}"})
		resp, err := http.Get(base + "/")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, string(body), `<meta name="chatd-entity-url-template" content="https://site.example/{type}/{id}">`)
		assert.NotEmpty(t, resp.Header.Get("Content-Security-Policy"))
	})
	t.Run("off", func(t *testing.T) {
		base, _, _ := startRun(t, map[string]string{"CHATD_UI": "false"})
		for _, path := range []string{"/", "/ui/app.js"} {
			resp, err := http.Get(base + path)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		}
	})
}

// TestCORSAllowsThePrincipalHeaderInEveryMode: a browser's preflight that
// lists the principal header among the headers it will send is answered
// for the configured origin whatever the auth mode, as it is in header
// mode (a page built for a gateway still sends it).
func TestCORSAllowsThePrincipalHeaderInEveryMode(t *testing.T) {
	const origin = "http://app.localhost:3000"
	for _, mode := range []map[string]string{
		{"CHATD_AUTH_MODE": "apikey", "CHATD_API_KEYS": "alice:alices-key"},
		{"CHATD_AUTH_MODE": "header"},
		{"CHATD_AUTH_MODE": "none"},
	} {
		t.Run(mode["CHATD_AUTH_MODE"], func(t *testing.T) {
			mode["CHATD_CORS_ORIGINS"] = origin
			base, _, _ := startRun(t, mode)
			req, err := http.NewRequest(http.MethodOptions, base+"/v1/threads", nil)
			require.NoError(t, err)
			req.Header.Set("Origin", origin)
			req.Header.Set("Access-Control-Request-Method", http.MethodPost)
			req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-chatd-principal")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
			assert.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "x-chatd-principal")
		})
	}
}
