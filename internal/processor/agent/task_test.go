package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/processor/agent"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// recordedServer is the reference server with everything chatd writes to
// it copied to a file, so a test can see the requests it sent.
func recordedServer(tb testing.TB) (agent.MCPServer, func() string) {
	tb.Helper()
	everything := everythingServer(tb)
	log := filepath.Join(tb.TempDir(), "requests.jsonl")
	cmd := "tee -a " + log + " | exec " + everything.Command + " " + strings.Join(everything.Args, " ")
	everything.Command, everything.Args = "sh", []string{"-c", cmd}
	return everything, func() string {
		data, _ := os.ReadFile(log)
		return string(data)
	}
}

// loopbackListen makes the node server it is run before listen on a port
// of the loopback interface the system picks, and say which on stderr.
const loopbackListen = `
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (port, ...rest) {
  if (typeof port !== "number" && typeof port !== "string") return listen.call(this, port, ...rest);
  this.once("listening", () => console.error("chatd-test listening at " + this.address().port));
  return listen.call(this, 0, "127.0.0.1", ...rest.filter((a) => typeof a === "function"));
};
import(process.argv[1]);`

// recordedHTTPServer is the reference server over streamable HTTP on a
// loopback port, behind a proxy that copies every request body chatd sends
// it, so a test can see them.
func recordedHTTPServer(tb testing.TB) (agent.MCPServer, func() string) {
	tb.Helper()
	everything := everythingServer(tb)
	cmd := exec.Command(everything.Command, "-e", loopbackListen, everything.Args[0], "streamableHttp")
	stderr, err := cmd.StderrPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "chatd-test listening at "); ok {
				port <- p
			}
		}
	}()
	var target *url.URL
	select {
	case p := <-port:
		target, err = url.Parse("http://127.0.0.1:" + p)
		require.NoError(tb, err)
	case <-time.After(time.Minute):
		tb.Fatal("the reference server did not start listening")
	}
	var mu sync.Mutex
	var log strings.Builder
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // SSE: every event as it comes
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			log.Write(body)
			log.WriteByte('\n')
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(front.Close)
	srv := agent.MCPServer{Name: "everything", Transport: agent.TransportStreamableHTTP, URL: front.URL + "/mcp"}
	return srv, func() string {
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
}

// taskServers are the reference server over each transport chatd calls
// tasks on.
var taskServers = []struct {
	name  string
	start func(testing.TB) (agent.MCPServer, func() string)
}{
	{"stdio", recordedServer},
	{"streamable-http", recordedHTTPServer},
}

// taskStatuses returns the task statuses a streamed turn's status items
// carried, as "status: statusMessage".
func taskStatuses(tb testing.TB, c *chatd, thread, text string) ([]string, []sseEvent) {
	tb.Helper()
	events := c.stream(tb, context.Background(), thread, text).all(tb)
	var out []string
	for _, ev := range events {
		if ev.name != "text.delta" {
			continue
		}
		var d struct {
			Meta struct {
				Item struct {
					Status        string `json:"status"`
					StatusMessage string `json:"statusMessage"`
				} `json:"drupal.org/ai.status_item"`
			} `json:"_meta"`
		}
		require.NoError(tb, json.Unmarshal(ev.data, &d))
		if d.Meta.Item.Status != "" {
			out = append(out, d.Meta.Item.Status+": "+d.Meta.Item.StatusMessage)
		}
	}
	return out, events
}

// TestMCPReferenceServerTasks: the reference server's research query must
// run as a task: chatd polls it, streaming each status; the task that asks
// for input is answered on another instance; a stop and the turn timeout
// cancel it (tasks/cancel).
func TestMCPReferenceServerTasks(t *testing.T) {
	for _, srv := range taskServers {
		t.Run(srv.name, func(t *testing.T) { testReferenceServerTasks(t, srv.start) })
	}
}

func testReferenceServerTasks(t *testing.T, start func(testing.TB) (agent.MCPServer, func() string)) {
	everything, requests := start(t)
	redisSrv := redistest.Start(t)
	m := newFakeModel(t)
	stA, stB := openRedisStore(t, redisSrv), openRedisStore(t, redisSrv)
	agentA, mgrA := mcpAgent(t, m, stA.Relay(), everything)
	agentB, _ := mcpAgent(t, m, stB.Relay(), everything)
	first := newChatd(t, stA, agentA, turn.DefaultConfig)
	second := newChatd(t, stB, agentB, turn.DefaultConfig)
	waitForTool(t, mgrA.Server("everything"), "everything__simulate-research-query")
	thread := first.mustThread(t)

	t.Run("research task", func(t *testing.T) {
		m.add(toolReply("", call{"call_1", "everything__simulate-research-query", `{"topic":"tides"}`}), textReply("Here is the report."))
		statuses, events := taskStatuses(t, first, thread, "research tides")
		require.NotEmpty(t, statuses)
		assert.True(t, strings.HasPrefix(statuses[0], "working: "), "the task as created: %v", statuses)
		assert.Contains(t, statuses, "working: Gathering sources...")
		assert.Contains(t, statuses, "working: Generating report...")
		last := events[len(events)-1]
		require.Equal(t, "turn.completed", last.name)
		assert.Contains(t, string(last.data), "Research Report: tides")
		assert.Contains(t, requests(), `"method":"tasks/get"`)
		assert.Contains(t, requests(), `"method":"tasks/result"`)
	})

	t.Run("a task asks for input, answered on another instance", func(t *testing.T) {
		m.add(toolReply("", call{"call_2", "everything__simulate-research-query", `{"topic":"python","ambiguous":true}`}),
			textReply("Programming it is."))
		paused := first.mustTurn(t, thread, "research python")
		require.Equal(t, "input_required", paused.Status)
		assert.Contains(t, paused.Elicitation.Message, "could have multiple interpretations")
		done := second.mustAnswer(t, thread, paused.elicitationID(),
			map[string]any{"action": "accept", "content": map[string]any{"interpretation": "programming"}})
		require.Equal(t, "completed", done.Status)
		assert.Contains(t, string(done.Message.ContentBlocks[0]), "Research Report: python (programming)")
	})

	t.Run("a stop cancels the task", func(t *testing.T) {
		m.add(toolReply("", call{"call_3", "everything__simulate-research-query", `{"topic":"stars"}`}))
		started := make(chan struct{})
		go func() {
			for !strings.Contains(requests(), `"topic":"stars"`) {
				time.Sleep(20 * time.Millisecond)
			}
			close(started)
		}()
		res := stopWhenRunning(t, first, thread, "research stars", started)
		assert.Equal(t, "stopped", res.Status)
		assert.Equal(t, "cancelled", res.toolCalls()[0]["status"])
		require.Eventually(t, func() bool { return strings.Contains(requests(), `"method":"tasks/cancel"`) },
			time.Minute, 20*time.Millisecond, "the task is cancelled")
	})
}

// TestMCPTaskTimeout: a task that outlasts the turn is cancelled when the
// turn times out.
func TestMCPTaskTimeout(t *testing.T) {
	for _, srv := range taskServers {
		t.Run(srv.name, func(t *testing.T) { testTaskTimeout(t, srv.start) })
	}
}

func testTaskTimeout(t *testing.T, start func(testing.TB) (agent.MCPServer, func() string)) {
	everything, requests := start(t)
	m := newFakeModel(t, toolReply("", call{"call_1", "everything__simulate-research-query", `{"topic":"slow"}`}))
	st := store.NewMemory(testStoreOpts)
	t.Cleanup(func() { _ = st.Close() })
	a, mgr := mcpAgent(t, m, store.NewLocalBus(), everything)
	waitForTool(t, mgr.Server("everything"), "everything__simulate-research-query")
	cfg := turn.DefaultConfig
	cfg.TurnTimeout = time.Second // the task takes four
	c := newChatd(t, st, a, cfg)
	status, body := c.turn(t, c.mustThread(t), "research slowly")
	require.Equal(t, http.StatusBadGateway, status, "%s", body)
	assert.Equal(t, "the processor did not answer within the turn timeout", mustProblem(t, body).Detail)
	require.Eventually(t, func() bool { return strings.Contains(requests(), `"method":"tasks/cancel"`) },
		time.Minute, 20*time.Millisecond, "the task is cancelled")
}

// TestMCPTaskServerGone: a task whose server goes away mid-task fails the
// call; the model hears it and the turn goes on.
func TestMCPTaskServerGone(t *testing.T) {
	everything, requests := recordedServer(t)
	m := newFakeModel(t, toolReply("", call{"call_1", "everything__simulate-research-query", `{"topic":"gone"}`}),
		textReply("The research tool is unavailable."))
	st := store.NewMemory(testStoreOpts)
	t.Cleanup(func() { _ = st.Close() })
	a, mgr := mcpAgent(t, m, store.NewLocalBus(), everything)
	waitForTool(t, mgr.Server("everything"), "everything__simulate-research-query")
	c := newChatd(t, st, a, turn.DefaultConfig)
	thread := c.mustThread(t)
	go func() {
		for !strings.Contains(requests(), `"method":"tasks/get"`) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = mgr.Close()
	}()
	res := c.mustTurn(t, thread, "research")
	require.Equal(t, "completed", res.Status)
	assert.Equal(t, "The research tool is unavailable.", res.Message.Text)
	assert.Equal(t, "failed", res.toolCalls()[0]["status"])
}
