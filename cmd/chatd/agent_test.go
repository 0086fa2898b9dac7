package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newFakeModel is an OpenAI-compatible endpoint that streams "Hello from
// <model>" and records the models it was asked for.
func newFakeModel(tb testing.TB) (baseURL string, models func() []string) {
	tb.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		seen = append(seen, req.Model)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, delta := range []string{`{"content":"Hello from "}`, fmt.Sprintf(`{"content":%q}`, req.Model)} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta)
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestRunWithAgents serves the agent of the CHATD_AGENT_* variables and an
// agent of the agents file, each a processor of its own.
func TestRunWithAgents(t *testing.T) {
	baseURL, models := newFakeModel(t)
	file := filepath.Join(t.TempDir(), "agents.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`agents:
  - name: support
    description: Support desk
    base_url: %s
    model: support-model
    api_key_env: CHATD_TEST_SUPPORT_KEY
  - name: unused
    base_url: %s
    model: other
`, baseURL, baseURL)), 0o600))
	base, stop, _ := startRun(t, map[string]string{
		"CHATD_PROCESSORS":        "agent,support,echo",
		"CHATD_DEFAULT_PROCESSOR": "agent",
		"CHATD_AGENT_BASE_URL":    baseURL,
		"CHATD_AGENT_MODEL":       "env-model",
		"CHATD_AGENTS_FILE":       file,
		"CHATD_TEST_SUPPORT_KEY":  "sk-x",
	})

	status, list := mustDo(t, http.MethodGet, base+"/v1/processors", "", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "agent", list["default"])
	assert.Len(t, list["processors"], 3, "only the enabled agents of the file are processors")

	for _, tc := range []struct{ processor, want string }{
		{"agent", "Hello from env-model"},
		{"support", "Hello from support-model"},
	} {
		status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", fmt.Sprintf(`{"processor":%q}`, tc.processor), nil)
		require.Equal(t, http.StatusCreated, status)
		status, turn := mustDo(t, http.MethodPost, base+"/v1/threads/"+thread["id"].(string)+"/turns", `{"message":"hi"}`, nil)
		require.Equal(t, http.StatusOK, status, turn)
		assert.Equal(t, tc.want, turn["message"].(map[string]any)["message"])
	}
	assert.Equal(t, []string{"env-model", "support-model"}, models())
	require.NoError(t, stop())
}

func TestRunRefusesBadAgentConfiguration(t *testing.T) {
	badFile := filepath.Join(t.TempDir(), "agents.yaml")
	require.NoError(t, os.WriteFile(badFile, []byte("agents:\n  - name: a\n    base_url: http://127.0.0.1:1/v1\n    model: m\n    max_steps: 0\n"), 0o600))
	builtinName := filepath.Join(t.TempDir(), "agents.yaml")
	require.NoError(t, os.WriteFile(builtinName, []byte("agents:\n  - name: demo\n    base_url: http://127.0.0.1:1/v1\n    model: m\n"), 0o600))

	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"agent without a model": {map[string]string{"CHATD_PROCESSORS": "agent", "CHATD_DEFAULT_PROCESSOR": "agent"},
			`processor "agent": set CHATD_AGENT_BASE_URL (such as http://127.0.0.1:11434/v1) and CHATD_AGENT_MODEL`},
		"agent with a bad base url": {map[string]string{"CHATD_PROCESSORS": "agent", "CHATD_DEFAULT_PROCESSOR": "agent",
			"CHATD_AGENT_BASE_URL": "localhost:11434", "CHATD_AGENT_MODEL": "m"}, "CHATD_AGENT_*: base_url"},
		"h2c over https": {map[string]string{"CHATD_PROCESSORS": "agent", "CHATD_DEFAULT_PROCESSOR": "agent",
			"CHATD_AGENT_BASE_URL": "https://api.example.com/v1", "CHATD_AGENT_MODEL": "m", "CHATD_AGENT_H2C": "true"},
			"CHATD_AGENT_*: h2c: only for an http:// base_url"},
		"bad agents file, even unused": {map[string]string{"CHATD_PROCESSORS": "demo", "CHATD_AGENTS_FILE": badFile},
			"CHATD_AGENTS_FILE: " + badFile + ":5: agents[0].max_steps: must be at least 1"},
		"missing agents file": {map[string]string{"CHATD_AGENTS_FILE": filepath.Join(t.TempDir(), "none.yaml")},
			"CHATD_AGENTS_FILE: open"},
		"file agent named like a built-in": {map[string]string{"CHATD_AGENTS_FILE": builtinName},
			`CHATD_AGENTS_FILE: ` + builtinName + `:2: agents[0].name: "demo" is the name of a built-in processor`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("CHATD_ADDR", freeAddr(t))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := run(ctx, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
