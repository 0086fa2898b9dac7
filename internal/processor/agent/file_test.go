package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/processor/agent"
	"chatd/internal/processor/remote"
)

func testEnv(name string) string {
	return map[string]string{"SUPPORT_KEY": "sk-support"}[name]
}

const validFile = `# two agents and the servers they use
agents:
  - name: support
    description: Answers support questions
    base_url: http://127.0.0.1:11434/v1
    model: llama3.1
    api_key_env: SUPPORT_KEY
    h2c: true
    system_prompt: |
      You are a helpful support agent.
    max_steps: 4
    history_window: 10
    temperature: 0.2
    tools:
      ask_user: false
      mcp: [files, search]
      confirm: ["files__*"]
      no_confirm: ["files__read_*"]
  - name: writer
    base_url: https://api.example.com/v1
    model: 4
mcp_servers:
  - name: files
    transport: stdio
    command: mcp-files
    args: ["--root", "/srv/files"]
    env: {LOG_LEVEL: warn}
    allow: ["read_*", "delete_*"]
  - name: search
    transport: streamable-http
    url: http://127.0.0.1:9000/mcp
    headers:
      Authorization: Bearer x
`

func TestParseFile(t *testing.T) {
	f, err := agent.ParseFile("agents.yaml", []byte(validFile), testEnv)
	require.NoError(t, err)
	require.Len(t, f.Agents, 2)

	support := f.Agents[0]
	assert.Equal(t, "support", support.Name)
	temp := 0.2
	assert.Equal(t, agent.Config{
		Description: "Answers support questions", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1",
		APIKey: "sk-support", H2C: true, SystemPrompt: "You are a helpful support agent.\n", MaxSteps: 4, HistoryWindow: 10,
		Temperature: &temp, AskUser: false, Confirm: []string{"files__*"}, NoConfirm: []string{"files__read_*"},
	}, support.Config)
	assert.Equal(t, []string{"files", "search"}, support.MCP)

	writer := f.Agents[1]
	assert.Equal(t, agent.Config{BaseURL: "https://api.example.com/v1", Model: "4",
		MaxSteps: agent.DefaultMaxSteps, HistoryWindow: agent.DefaultHistoryWindow, AskUser: true},
		writer.Config, "defaults: max_steps 8, history_window 20, ask_user on")

	assert.Equal(t, []agent.MCPServer{
		{Name: "files", Transport: agent.TransportStdio, Command: "mcp-files", Args: []string{"--root", "/srv/files"},
			Env: map[string]string{"LOG_LEVEL": "warn"}, Allow: []string{"read_*", "delete_*"}},
		{Name: "search", Transport: agent.TransportStreamableHTTP, URL: "http://127.0.0.1:9000/mcp",
			Headers: map[string]string{"Authorization": "Bearer x"}},
	}, f.MCPServers)

	for _, fa := range f.Agents {
		_, err := agent.New(fa.Config)
		assert.NoError(t, err, "a parsed agent builds")
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agents.yaml")
	require.NoError(t, os.WriteFile(path, []byte(validFile), 0o600))
	f, err := agent.LoadFile(path, testEnv)
	require.NoError(t, err)
	assert.Len(t, f.Agents, 2)

	_, err = agent.LoadFile(filepath.Join(t.TempDir(), "missing.yaml"), testEnv)
	assert.Error(t, err)
}

// agentWith is a valid one-agent file with extra lines appended to the agent.
func agentWith(lines ...string) string {
	return "agents:\n  - name: a\n    base_url: http://127.0.0.1:11434/v1\n    model: m\n" + indent(lines, "    ")
}

func indent(lines []string, prefix string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

// serverWith is a valid file whose one server has these lines.
func serverWith(lines ...string) string {
	return agentWith() + "mcp_servers:\n  - name: s\n" + indent(lines, "    ")
}

// remoteWith is a file whose only entry is a remote processor r with these
// lines.
func remoteWith(lines ...string) string {
	return "remote_processors:\n  - name: r\n" + indent(lines, "    ")
}

func TestParseFileRemoteProcessors(t *testing.T) {
	env := func(name string) string { return map[string]string{"DRUPAL_SECRET": "s3cret"}[name] }
	f, err := agent.ParseFile("agents.yaml", []byte(`remote_processors:
  - name: drupal
    description: The site's own assistant
    url: https://127.0.0.1:8443/chat
    secret_env: DRUPAL_SECRET
    headers: {X-Site: main, Authorization: Bearer x}
    timeout: 1m30s
  - name: plain
    url: http://127.0.0.1:8000/
`), env)
	require.NoError(t, err, "agents may be absent when remote processors are given")
	assert.Empty(t, f.Agents)
	require.Len(t, f.RemoteProcessors, 2)
	assert.Equal(t, agent.FileRemote{Name: "drupal", Line: 2, Config: remote.Config{
		Name: "drupal", Description: "The site's own assistant", URL: "https://127.0.0.1:8443/chat", Secret: "s3cret",
		Headers: map[string]string{"X-Site": "main", "Authorization": "Bearer x"}, Timeout: 90 * time.Second,
	}}, f.RemoteProcessors[0])
	assert.Equal(t, agent.FileRemote{Name: "plain", Line: 8, Config: remote.Config{Name: "plain", URL: "http://127.0.0.1:8000/"}},
		f.RemoteProcessors[1], "no secret, no headers, no timeout of its own")
	for _, r := range f.RemoteProcessors {
		_, err := remote.New(r.Config)
		assert.NoError(t, err, "a parsed remote processor builds")
	}

	_, err = agent.ParseFile("agents.yaml", []byte("agents: []\nremote_processors: []\n"), env)
	assert.NoError(t, err, "an empty agents list beside remote_processors")
}

func TestParseFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		want []string // each error line, exactly
	}{
		{"empty", "", []string{"agents.yaml: the file is empty: want agents: [...]"}},
		{"not yaml", "agents: [\n  - {", []string{"agents.yaml: yaml: line 1: did not find expected node content"}},
		{"not a mapping", "- a\n", []string{"agents.yaml:1: : want a mapping of fields, got a list"}},
		{"no agents", "mcp_servers: []\n", []string{"agents.yaml:1: agents: required: a list of agents, unless remote_processors are given"}},
		{"agents not a list", "agents: yes\n", []string{`agents.yaml:1: agents: want a list, got "yes"`}},
		{"unknown top-level field", agentWith() + "agent: []\n", []string{"agents.yaml:5: agent: unknown field"}},
		{"unknown agent field", agentWith("max_step: 3"), []string{"agents.yaml:5: agents[0].max_step: unknown field"}},
		{"missing required", "agents:\n  - description: x\n", []string{
			"agents.yaml:2: agents[0].name: required",
			"agents.yaml:2: agents[0].base_url: required",
			"agents.yaml:2: agents[0].model: required",
		}},
		{"bad base_url", "agents:\n  - name: a\n    base_url: 127.0.0.1:11434\n    model: m\n", []string{
			"agents.yaml:3: agents[0].base_url: want an http or https URL with /v1, such as http://127.0.0.1:11434/v1"}},
		{"bad name", "agents:\n  - name: my agent\n    base_url: http://h/v1\n    model: m\n", []string{
			`agents.yaml:2: agents[0].name: "my agent": want 1 to 64 letters, digits, _ or -, starting with a letter or digit`}},
		{"h2c over https", "agents:\n  - name: a\n    base_url: https://h/v1\n    model: m\n    h2c: true\n", []string{
			"agents.yaml:5: agents[0].h2c: only for an http:// base_url (https negotiates HTTP/2 by itself)"}},
		{"h2c not a boolean", agentWith("h2c: yes please"), []string{`agents.yaml:5: agents[0].h2c: want true or false, got "yes please"`}},
		{"max_steps zero", agentWith("max_steps: 0"), []string{"agents.yaml:5: agents[0].max_steps: must be at least 1"}},
		{"max_steps not a number", agentWith("max_steps: many"), []string{`agents.yaml:5: agents[0].max_steps: want a whole number, got "many"`}},
		{"history_window negative", agentWith("history_window: -1"), []string{"agents.yaml:5: agents[0].history_window: must not be negative"}},
		{"temperature out of range", agentWith("temperature: 3"), []string{"agents.yaml:5: agents[0].temperature: must be between 0 and 2"}},
		{"model is a list", "agents:\n  - name: a\n    base_url: http://h/v1\n    model: [x]\n", []string{
			"agents.yaml:4: agents[0].model: want a string, got a list"}},
		{"unset api key variable", agentWith("api_key_env: NOPE"), []string{"agents.yaml:5: agents[0].api_key_env: the variable NOPE is not set"}},
		{"duplicate key", agentWith("model: n"), []string{"agents.yaml:5: agents[0].model: appears more than once"}},
		{"duplicate agent", agentWith() + "  - name: a\n    base_url: http://h/v1\n    model: m\n", []string{
			`agents.yaml:5: agents[1].name: "a" is already the name of agents[0]`}},
		{"unknown tools field", agentWith("tools:", "  ask: true"), []string{"agents.yaml:6: agents[0].tools.ask: unknown field"}},
		{"ask_user not a boolean", agentWith("tools: {ask_user: sometimes}"), []string{
			`agents.yaml:5: agents[0].tools.ask_user: want true or false, got "sometimes"`}},
		{"bad glob", agentWith("tools:", "  confirm: ['files__[']"), []string{
			`agents.yaml:6: agents[0].tools.confirm[0]: "files__[" is not a valid glob: syntax error in pattern`}},
		{"unknown server", agentWith("tools:", "  mcp:", "    - nope"), []string{
			`agents.yaml:7: agents[0].tools.mcp[0]: "nope" is not a server of mcp_servers`}},
		{"server without transport", serverWith("command: x"), []string{"agents.yaml:6: mcp_servers[0].transport: required: stdio or streamable-http"}},
		{"bad transport", serverWith("transport: sse"), []string{`agents.yaml:7: mcp_servers[0].transport: "sse": want stdio or streamable-http`}},
		{"stdio without command", serverWith("transport: stdio"), []string{"agents.yaml:7: mcp_servers[0].command: required with transport stdio"}},
		{"http without url", serverWith("transport: streamable-http"), []string{"agents.yaml:7: mcp_servers[0].url: required with transport streamable-http"}},
		{"fields of the other transport", serverWith("transport: streamable-http", "url: http://127.0.0.1:9/mcp", "command: x", "env: {A: b}"), []string{
			"agents.yaml:9: mcp_servers[0].command: is for transport stdio, not streamable-http",
			"agents.yaml:10: mcp_servers[0].env: is for transport stdio, not streamable-http",
		}},
		{"bad server url", serverWith("transport: streamable-http", "url: /mcp"), []string{"agents.yaml:8: mcp_servers[0].url: want an http or https URL"}},
		{"server name with __", "agents: []\nmcp_servers:\n  - name: a__b\n    transport: stdio\n    command: x\n", []string{
			"agents.yaml:3: mcp_servers[0].name: must not contain __, which separates server and tool in tool names"}},
		{"headers not a mapping", serverWith("transport: streamable-http", "url: http://h/mcp", "headers: [a]"), []string{
			"agents.yaml:9: mcp_servers[0].headers: want a mapping of fields, got a list"}},
		{"args not strings", serverWith("transport: stdio", "command: x", "args: [[a]]"), []string{
			"agents.yaml:9: mcp_servers[0].args[0]: want a string, got a list"}},
		{"unknown server field", serverWith("transport: stdio", "command: x", "cwd: /tmp"), []string{
			"agents.yaml:9: mcp_servers[0].cwd: unknown field"}},
		{"remote without url", "remote_processors:\n  - name: r\n    description: x\n", []string{
			"agents.yaml:2: remote_processors[0].url: required"}},
		{"remote url not http", remoteWith("url: ftp://127.0.0.1/chat"), []string{
			"agents.yaml:3: remote_processors[0].url: want an http or https URL, such as http://127.0.0.1:8000/chat"}},
		{"remote url without a host", remoteWith("url: /chat"), []string{
			"agents.yaml:3: remote_processors[0].url: want an http or https URL, such as http://127.0.0.1:8000/chat"}},
		{"remote url twice", remoteWith("url: http://127.0.0.1:1/", "url: http://127.0.0.1:2/"), []string{
			"agents.yaml:4: remote_processors[0].url: appears more than once"}},
		{"remote secret variable unset", remoteWith("url: http://127.0.0.1:1/", "secret_env: NOPE"), []string{
			"agents.yaml:4: remote_processors[0].secret_env: the variable NOPE is not set"}},
		{"remote timeout not a duration", remoteWith("url: http://127.0.0.1:1/", "timeout: 30"), []string{
			`agents.yaml:4: remote_processors[0].timeout: "30": want a duration such as 30s or 2m`}},
		{"remote timeout zero", remoteWith("url: http://127.0.0.1:1/", "timeout: 0s"), []string{
			"agents.yaml:4: remote_processors[0].timeout: must be positive"}},
		{"remote header chatd sets", remoteWith("url: http://127.0.0.1:1/", "headers:", "  chatd-signature: x", "  Content-Type: text/plain", "  Host: h"), []string{
			"agents.yaml:5: remote_processors[0].headers.chatd-signature: is set by chatd",
			"agents.yaml:6: remote_processors[0].headers.Content-Type: is set by chatd",
			"agents.yaml:7: remote_processors[0].headers.Host: is set by the HTTP transport",
		}},
		{"remote header twice in two cases", remoteWith("url: http://127.0.0.1:1/", "headers: {X-Site: a, x-site: b}"), []string{
			"agents.yaml:4: remote_processors[0].headers.x-site: appears more than once (header names ignore case)"}},
		{"remote header bad name", remoteWith("url: http://127.0.0.1:1/", "headers: {'a b': c}"), []string{
			"agents.yaml:4: remote_processors[0].headers.a b: not a valid header name"}},
		{"unknown remote field", remoteWith("url: http://127.0.0.1:1/", "secret: x"), []string{
			"agents.yaml:4: remote_processors[0].secret: unknown field"}},
		{"duplicate remote", "remote_processors:\n  - {name: r, url: 'http://127.0.0.1:1/'}\n  - {name: r, url: 'http://127.0.0.1:2/'}\n", []string{
			`agents.yaml:3: remote_processors[1].name: "r" is already the name of remote_processors[0]`}},
		{"remote named like an agent", agentWith() + "remote_processors:\n  - name: a\n    url: http://127.0.0.1:1/\n", []string{
			`agents.yaml:6: remote_processors[0].name: "a" is already the name of agents[0]`}},
		{"duplicate server", "agents: []\nmcp_servers:\n  - {name: s, transport: stdio, command: x}\n  - {name: s, transport: stdio, command: y}\n", []string{
			`agents.yaml:4: mcp_servers[1].name: "s" is already the name of mcp_servers[0]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.ParseFile("agents.yaml", []byte(tc.file), testEnv)
			require.Error(t, err)
			assert.Equal(t, tc.want, strings.Split(err.Error(), "\n"))
		})
	}
}
