package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWithRemoteProcessor serves a remote processor of the agents file
// (a file without agents), signed with the secret its variable holds and
// sent its own header.
func TestRunWithRemoteProcessor(t *testing.T) {
	const secret = "s3cret"
	got := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, mac, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Chatd-Signature"), "t="), ",v1=")
		h := hmac.New(sha256.New, []byte(secret))
		h.Write([]byte(ts + "." + string(body)))
		if !hmac.Equal([]byte(mac), []byte(hex.EncodeToString(h.Sum(nil)))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var req struct {
			Processor string `json:"processor"`
			Message   struct {
				Text string `json:"message"`
			} `json:"message"`
		}
		_ = json.Unmarshal(body, &req)
		got <- r
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text":%q}`, req.Processor+" heard "+req.Message.Text)
	}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "agents.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`remote_processors:
  - name: site
    description: The site's assistant
    url: %s/chat
    secret_env: CHATD_TEST_SITE_SECRET
    headers: {X-Site: main}
    timeout: 5s
`, srv.URL)), 0o600))
	base, stop, _ := startRun(t, map[string]string{
		"CHATD_PROCESSORS": "site,demo", "CHATD_DEFAULT_PROCESSOR": "site",
		"CHATD_AGENTS_FILE": file, "CHATD_TEST_SITE_SECRET": secret,
	})

	status, list := mustDo(t, http.MethodGet, base+"/v1/processors", "", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "site", list["default"])
	assert.Contains(t, list["processors"], map[string]any{"name": "site", "description": "The site's assistant"})

	status, thread := mustDo(t, http.MethodPost, base+"/v1/threads", "", nil)
	require.Equal(t, http.StatusCreated, status)
	status, turn := mustDo(t, http.MethodPost, base+"/v1/threads/"+thread["id"].(string)+"/turns", `{"message":"hi"}`, nil)
	require.Equal(t, http.StatusOK, status, turn)
	assert.Equal(t, "site heard hi", turn["message"].(map[string]any)["message"])
	r := <-got
	assert.Equal(t, "/chat", r.URL.Path)
	assert.Equal(t, "main", r.Header.Get("X-Site"))
	assert.Equal(t, turn["turn_id"], r.Header.Get("Chatd-Turn-Id"))
	require.NoError(t, stop())
}

func TestRunRefusesBadRemoteProcessors(t *testing.T) {
	write := func(content string) string {
		path := filepath.Join(t.TempDir(), "agents.yaml")
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	for name, tc := range map[string]struct {
		file, want string
	}{
		"named like a built-in": {"remote_processors:\n  - name: echo\n    url: http://127.0.0.1:1/\n",
			`:2: remote_processors[0].name: "echo" is the name of a built-in processor`},
		"named like the environment's agent": {"remote_processors:\n  - name: agent\n    url: http://127.0.0.1:1/\n",
			`:2: remote_processors[0].name: "agent" is the name of a built-in processor`},
		"without a url": {"remote_processors:\n  - name: r\n", ":2: remote_processors[0].url: required"},
		"a url that is not http": {"remote_processors:\n  - name: r\n    url: unix:///run/r.sock\n",
			":3: remote_processors[0].url: want an http or https URL"},
		"an unset secret variable": {"remote_processors:\n  - name: r\n    url: http://127.0.0.1:1/\n    secret_env: CHATD_TEST_UNSET_SECRET\n",
			":4: remote_processors[0].secret_env: the variable CHATD_TEST_UNSET_SECRET is not set"},
		"named like an agent": {"agents:\n  - {name: a, base_url: 'http://127.0.0.1:1/v1', model: m}\nremote_processors:\n  - name: a\n    url: http://127.0.0.1:1/\n",
			`:4: remote_processors[0].name: "a" is already the name of agents[0]`},
	} {
		t.Run(name, func(t *testing.T) {
			file := write(tc.file)
			t.Setenv("CHATD_ADDR", freeAddr(t))
			t.Setenv("CHATD_AGENTS_FILE", file)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := run(ctx, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "CHATD_AGENTS_FILE: "+file+tc.want)
		})
	}
}
