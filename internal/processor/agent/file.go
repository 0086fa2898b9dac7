package agent

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// File is a parsed agents file (CHATD_AGENTS_FILE):
//
//	agents:
//	  - name: support                        # the processor's name
//	    description: Answers support questions
//	    base_url: http://127.0.0.1:11434/v1  # the API root, /v1 included
//	    model: llama3.1
//	    api_key_env: SUPPORT_API_KEY         # the variable holding the key, if any
//	    h2c: false                           # HTTP/2 without TLS to an http:// base_url
//	    system_prompt: You are a helpful support agent.
//	    max_steps: 8                         # model calls per turn
//	    max_tokens_per_turn: 20000           # optional: input+output tokens per turn
//	    history_window: 20                   # messages the model sees
//	    temperature: 0.2                     # optional
//	    inputs: [image, audio, file]         # given to the model as themselves, not summaries
//	    tools:
//	      ask_user: true
//	      mcp: [files]                       # servers of mcp_servers
//	      confirm: ["files__*"]              # tool name globs
//	      no_confirm: ["files__read_*"]
//	mcp_servers:
//	  - name: files
//	    transport: stdio                     # or streamable-http
//	    command: mcp-files                   # stdio: command, args, env
//	    args: ["--root", "/srv/files"]
//	    env: {LOG_LEVEL: warn}
//	    url: http://127.0.0.1:9000/mcp       # streamable-http: url, headers
//	    headers: {Authorization: Bearer x}
//	    allow: ["read_*", "list_*"]          # tools offered to the model
//	remote_processors:
//	  - name: drupal                         # the processor's name
//	    description: The site's own assistant
//	    url: http://127.0.0.1:8000/chat      # where each turn is POSTed
//	    secret_env: DRUPAL_SECRET            # the variable holding the signing secret, if any
//	    headers: {X-Site: main}              # sent to this processor alone
//	    timeout: 30s                         # optional, at most the turn timeout
//
// agents may be empty or absent when remote_processors are given. Every
// field is checked; an unknown one is an error, so a typo cannot silently
// drop a setting.
type File struct {
	Agents           []FileAgent
	MCPServers       []MCPServer
	RemoteProcessors []FileRemote
}

// FileAgent is one agent of the file: Config holds its settings, with the
// API key read from the variable named by api_key_env.
type FileAgent struct {
	Name string
	// Line is where the agent starts in the file.
	Line   int
	Config Config
	// MCP names the mcp_servers the agent uses.
	MCP []string
}

// MCPServer is an entry of mcp_servers: an MCP server whose tools an agent
// may use.
type MCPServer struct {
	Name      string
	Transport string // TransportStdio or TransportStreamableHTTP
	URL       string
	Headers   map[string]string
	Command   string
	Args      []string
	Env       map[string]string
	// InheritEnv gives a stdio server chatd's whole environment; without
	// it the server gets only Env and a minimal base (PATH, HOME, LANG,
	// TMPDIR), never chatd's keys or CHATD_* settings.
	InheritEnv bool
	// Allow are globs over the server's tool names (without the server
	// prefix); empty allows every tool.
	Allow []string
}

// The MCP transports an agents file may name.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
)

// namePattern is what an agent or server name may look like: it is a
// processor name in the API, and a server's name prefixes its tools' names
// (<server>__<tool>), which models restrict to letters, digits, _ and -.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$`)

// LoadFile reads and checks the agents file at filename; getenv resolves
// api_key_env. The error lists every problem as file:line: field: detail.
func LoadFile(filename string, getenv func(string) string) (*File, error) {
	data, err := os.ReadFile(filename)
	if err != nil {
		return nil, err
	}
	return ParseFile(filename, data, getenv)
}

// ParseFile parses and checks an agents file; name is how errors refer to
// it.
func ParseFile(name string, data []byte, getenv func(string) string) (*File, error) {
	p := &fileParser{name: name, getenv: getenv}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty: want agents: [...]", name)
	}
	f := p.file(doc.Content[0])
	if err := errors.Join(p.errs...); err != nil {
		return nil, err
	}
	return f, nil
}

type fileParser struct {
	name   string
	getenv func(string) string
	errs   []error
	// serverRefs are the tools.mcp entries, checked against mcp_servers
	// once the whole file is read.
	serverRefs []serverRef
}

type serverRef struct {
	node  *yaml.Node
	field string
	name  string
}

func (p *fileParser) errorf(n *yaml.Node, field, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d: %s: %s", p.name, n.Line, field, fmt.Sprintf(format, args...)))
}

// fields calls fn for each key of a mapping with its value and path,
// reporting duplicate keys and a node that is not a mapping.
func (p *fileParser) fields(n *yaml.Node, field string, fn func(key string, v *yaml.Node, field string) bool) map[string]bool {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, field, "want a mapping of fields, got %s", kind(n))
		return nil
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := k.Value
		if field != "" {
			sub = field + "." + k.Value
		}
		if seen[k.Value] {
			p.errorf(k, sub, "appears more than once")
			continue
		}
		seen[k.Value] = true
		if !fn(k.Value, v, sub) {
			p.errorf(k, sub, "unknown field")
		}
	}
	return seen
}

// object reads the fields of mapping n as fields does, then reports each
// name of required that n lacks.
func (p *fileParser) object(n *yaml.Node, field string, required []string, fn func(key string, v *yaml.Node, field string) bool) {
	seen := p.fields(n, field, fn)
	if seen == nil {
		return
	}
	for _, name := range required {
		if !seen[name] {
			p.errorf(n, field+"."+name, "required")
		}
	}
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

func (p *fileParser) file(root *yaml.Node) *File {
	f := &File{}
	var agentsNode, serversNode, remotesNode *yaml.Node
	p.fields(root, "", func(key string, v *yaml.Node, field string) bool {
		switch key {
		case "agents":
			agentsNode = v
			p.list(v, field, func(item *yaml.Node, field string) {
				f.Agents = append(f.Agents, p.agent(item, field))
			})
		case "mcp_servers":
			serversNode = v
			p.list(v, field, func(item *yaml.Node, field string) {
				f.MCPServers = append(f.MCPServers, p.server(item, field))
			})
		case "remote_processors":
			remotesNode = v
			p.list(v, field, func(item *yaml.Node, field string) {
				f.RemoteProcessors = append(f.RemoteProcessors, p.remote(item, field))
			})
		default:
			return false
		}
		return true
	})
	if agentsNode == nil && remotesNode == nil && root.Kind == yaml.MappingNode {
		p.errorf(root, "agents", "required: a list of agents, unless remote_processors are given")
	}
	p.checkNames(agentsNode, "agents", func(i int) string { return f.Agents[i].Name }, len(f.Agents))
	p.checkNames(remotesNode, "remote_processors", func(i int) string { return f.RemoteProcessors[i].Name }, len(f.RemoteProcessors))
	p.checkRemoteNames(f, remotesNode)
	p.checkNames(serversNode, "mcp_servers", func(i int) string { return f.MCPServers[i].Name }, len(f.MCPServers))
	servers := map[string]bool{}
	for _, s := range f.MCPServers {
		servers[s.Name] = true
	}
	for _, ref := range p.serverRefs {
		if ref.name != "" && !servers[ref.name] {
			p.errorf(ref.node, ref.field, "%q is not a server of mcp_servers", ref.name)
		}
	}
	return f
}

// checkNames reports names used twice in a list.
func (p *fileParser) checkNames(list *yaml.Node, field string, name func(int) string, n int) {
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) != n {
		return
	}
	first := map[string]int{}
	for i := range n {
		nm := name(i)
		if nm == "" {
			continue
		}
		if j, dup := first[nm]; dup {
			p.errorf(list.Content[i], fmt.Sprintf("%s[%d].name", field, i), "%q is already the name of %s[%d]", nm, field, j)
			continue
		}
		first[nm] = i
	}
}

func (p *fileParser) list(n *yaml.Node, field string, fn func(item *yaml.Node, field string)) {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, field, "want a list, got %s", kind(n))
		return
	}
	for i, item := range n.Content {
		fn(item, fmt.Sprintf("%s[%d]", field, i))
	}
}

func (p *fileParser) agent(n *yaml.Node, field string) FileAgent {
	a := FileAgent{Line: n.Line, Config: Config{MaxSteps: DefaultMaxSteps, HistoryWindow: DefaultHistoryWindow, AskUser: true}}
	var h2c *yaml.Node
	p.object(n, field, []string{"name", "base_url", "model"}, func(key string, v *yaml.Node, field string) bool {
		if key == "h2c" {
			h2c = v
		}
		return p.agentField(&a, key, v, field)
	})
	if u, err := url.Parse(a.Config.BaseURL); err == nil && a.Config.H2C && u.Scheme == "https" {
		p.errorf(h2c, field+".h2c", "only for an http:// base_url (https negotiates HTTP/2 by itself)")
	}
	return a
}

// agentField reads one field of an agent; false for a field agents do not
// have.
func (p *fileParser) agentField(a *FileAgent, key string, v *yaml.Node, field string) bool {
	switch key {
	case "name":
		a.Name = p.ident(v, field)
	case "description":
		a.Config.Description = p.str(v, field)
	case "base_url":
		a.Config.BaseURL = p.str(v, field)
		if u, err := url.Parse(a.Config.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.errorf(v, field, "want an http or https URL with /v1, such as http://127.0.0.1:11434/v1")
		}
	case "model":
		if a.Config.Model = p.str(v, field); strings.TrimSpace(a.Config.Model) == "" && v.Kind == yaml.ScalarNode {
			p.errorf(v, field, "must not be empty")
		}
	case "api_key_env":
		if env := p.str(v, field); env != "" {
			if a.Config.APIKey = p.getenv(env); a.Config.APIKey == "" {
				p.errorf(v, field, "the variable %s is not set", env)
			}
		}
	case "h2c":
		a.Config.H2C = p.bool(v, field)
	case "system_prompt":
		a.Config.SystemPrompt = p.str(v, field)
	case "max_steps":
		if n, ok := p.int(v, field); ok && n < 1 {
			p.errorf(v, field, "must be at least 1")
		} else {
			a.Config.MaxSteps = n
		}
	case "max_tokens_per_turn":
		if n, ok := p.int(v, field); ok && n < 0 {
			p.errorf(v, field, "must not be negative")
		} else {
			a.Config.MaxTokensPerTurn = int64(n)
		}
	case "history_window":
		if n, ok := p.int(v, field); ok && n < 0 {
			p.errorf(v, field, "must not be negative")
		} else {
			a.Config.HistoryWindow = n
		}
	case "temperature":
		if t, ok := p.float(v, field); ok && (t < 0 || t > 2) {
			p.errorf(v, field, "must be between 0 and 2")
		} else {
			a.Config.Temperature = &t
		}
	case "tools":
		p.tools(v, field, a)
	case "inputs":
		a.Config.Inputs = p.strs(v, field)
		if err := CheckInputs(a.Config.Inputs); err != nil {
			p.errorf(v, field, "%v", err)
		}
	default:
		return false
	}
	return true
}

func (p *fileParser) tools(n *yaml.Node, field string, a *FileAgent) {
	p.fields(n, field, func(key string, v *yaml.Node, field string) bool {
		switch key {
		case "ask_user":
			a.Config.AskUser = p.bool(v, field)
		case "mcp":
			p.list(v, field, func(item *yaml.Node, field string) {
				name := p.str(item, field)
				a.MCP = append(a.MCP, name)
				p.serverRefs = append(p.serverRefs, serverRef{item, field, name})
			})
		case "confirm":
			a.Config.Confirm = p.globs(v, field)
		case "no_confirm":
			a.Config.NoConfirm = p.globs(v, field)
		default:
			return false
		}
		return true
	})
}

func (p *fileParser) server(n *yaml.Node, field string) MCPServer {
	var s MCPServer
	var transportNode *yaml.Node
	set := map[string]*yaml.Node{}
	p.fields(n, field, func(key string, v *yaml.Node, field string) bool {
		set[key] = v
		switch key {
		case "name":
			s.Name = p.ident(v, field)
			if strings.Contains(s.Name, "__") {
				p.errorf(v, field, "must not contain __, which separates server and tool in tool names")
			}
		case "transport":
			transportNode = v
			s.Transport = p.str(v, field)
			if s.Transport != TransportStdio && s.Transport != TransportStreamableHTTP && v.Kind == yaml.ScalarNode {
				p.errorf(v, field, "%q: want stdio or streamable-http", s.Transport)
			}
		case "url":
			s.URL = p.str(v, field)
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.errorf(v, field, "want an http or https URL")
			}
		case "headers":
			s.Headers = p.strMap(v, field)
		case "command":
			if s.Command = p.str(v, field); strings.TrimSpace(s.Command) == "" && v.Kind == yaml.ScalarNode {
				p.errorf(v, field, "must not be empty")
			}
		case "args":
			s.Args = p.strs(v, field)
		case "env":
			s.Env = p.strMap(v, field)
		case "inherit_env":
			s.InheritEnv = p.bool(v, field)
		case "allow":
			s.Allow = p.globs(v, field)
		default:
			return false
		}
		return true
	})
	if n.Kind == yaml.MappingNode {
		if set["name"] == nil {
			p.errorf(n, field+".name", "required")
		}
		p.checkTransport(n, field, s.Transport, transportNode, set)
	}
	return s
}

// checkTransport checks a server's fields against its transport: each
// transport has its own fields, and the other's are a mistake, not
// something to ignore.
func (p *fileParser) checkTransport(n *yaml.Node, field, transport string, transportNode *yaml.Node, set map[string]*yaml.Node) {
	only := map[string][]string{
		TransportStdio:          {"command", "args", "env", "inherit_env"},
		TransportStreamableHTTP: {"url", "headers"},
	}
	required := map[string]string{TransportStdio: "command", TransportStreamableHTTP: "url"}
	switch transport {
	case TransportStdio, TransportStreamableHTTP:
		if set[required[transport]] == nil {
			p.errorf(transportNode, field+"."+required[transport], "required with transport %s", transport)
		}
		for t, keys := range only {
			if t == transport {
				continue
			}
			for _, k := range keys {
				if v := set[k]; v != nil {
					p.errorf(v, field+"."+k, "is for transport %s, not %s", t, transport)
				}
			}
		}
	case "":
		if transportNode == nil {
			p.errorf(n, field+".transport", "required: stdio or streamable-http")
		}
	}
}

func (p *fileParser) scalar(n *yaml.Node, field, want string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, field, "want %s, got %s", want, kind(n))
		return false
	}
	return true
}

// str reads a string. Numbers are taken as written (model: 4 is "4").
func (p *fileParser) str(n *yaml.Node, field string) string {
	if !p.scalar(n, field, "a string") {
		return ""
	}
	if n.Tag == "!!bool" {
		p.errorf(n, field, "want a string, got %s (quote it)", n.Value)
		return ""
	}
	return n.Value
}

// ident reads a name (agent or server).
func (p *fileParser) ident(n *yaml.Node, field string) string {
	s := p.str(n, field)
	if s != "" && !namePattern.MatchString(s) {
		p.errorf(n, field, "%q: want 1 to 64 letters, digits, _ or -, starting with a letter or digit", s)
	}
	if s == "" && n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		p.errorf(n, field, "must not be empty")
	}
	return s
}

func (p *fileParser) int(n *yaml.Node, field string) (int, bool) {
	var v int
	if !p.scalar(n, field, "a whole number") {
		return 0, false
	}
	if n.Tag != "!!int" || n.Decode(&v) != nil {
		p.errorf(n, field, "want a whole number, got %s", kind(n))
		return 0, false
	}
	return v, true
}

func (p *fileParser) float(n *yaml.Node, field string) (float64, bool) {
	var v float64
	if !p.scalar(n, field, "a number") {
		return 0, false
	}
	if (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
		p.errorf(n, field, "want a number, got %s", kind(n))
		return 0, false
	}
	return v, true
}

func (p *fileParser) bool(n *yaml.Node, field string) bool {
	var v bool
	if !p.scalar(n, field, "true or false") {
		return false
	}
	if n.Tag != "!!bool" || n.Decode(&v) != nil {
		p.errorf(n, field, "want true or false, got %s", kind(n))
	}
	return v
}

func (p *fileParser) strs(n *yaml.Node, field string) []string {
	var out []string
	p.list(n, field, func(item *yaml.Node, field string) {
		out = append(out, p.str(item, field))
	})
	return out
}

func (p *fileParser) globs(n *yaml.Node, field string) []string {
	var out []string
	p.list(n, field, func(item *yaml.Node, field string) {
		g := p.str(item, field)
		if _, err := path.Match(g, ""); err != nil {
			p.errorf(item, field, "%q is not a valid glob: %v", g, err)
		}
		out = append(out, g)
	})
	return out
}

func (p *fileParser) strMap(n *yaml.Node, field string) map[string]string {
	out := map[string]string{}
	p.fields(n, field, func(key string, v *yaml.Node, field string) bool {
		out[key] = p.str(v, field)
		return true
	})
	return out
}
