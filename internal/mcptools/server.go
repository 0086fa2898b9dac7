package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"chatd/internal/processor/agent"
	"chatd/internal/store"
)

// Relay carries messages between chatd instances: store.RedisRelay across
// the instances sharing a Redis, store.LocalBus within one process.
type Relay interface {
	// Publish sends payload to the channel's current subscribers and returns
	// how many received it (store.DeliveredUnknown when that cannot be
	// known).
	Publish(ctx context.Context, channel string, payload []byte) (int, error)
	// Subscribe delivers the channel's messages published after it returns.
	Subscribe(ctx context.Context, channel string) (*store.Subscription, error)
}

// Options configure a Manager.
type Options struct {
	// Relay reaches the other instances; nil is an in-process bus (one
	// instance).
	Relay Relay
	// HoldTTL is how long a 2025-era call waits open for the user's answer
	// before the server is answered cancel: chatd's elicitation TTL.
	HoldTTL time.Duration
	// AckTimeout is how long the instance that received an answer waits for
	// the holding instance to acknowledge it before deciding that instance
	// is gone (default 10s; only when the relay cannot count receivers).
	AckTimeout time.Duration
	// ConnectTimeout bounds connecting to a server (default 30s).
	ConnectTimeout time.Duration
	// MaxSessions caps the MCP sessions open at once per server, each
	// serving one call at a time (default 8).
	MaxSessions int
	// MaxHeldPerPrincipal caps the calls one principal's unanswered
	// questions hold open per 2025-era server, each holding a session
	// until answered or HoldTTL (default a quarter of MaxSessions, at
	// least 1): one tenant cannot take every session of a server.
	MaxHeldPerPrincipal int
	// SessionWait is how long a call waits for a session when all are
	// busy before it fails with a tool error saying so (default 5s), so a
	// turn is not stalled for as long as others' questions are held.
	SessionWait time.Duration
	// HTTPClient makes streamable HTTP requests; nil uses
	// http.DefaultTransport.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Manager runs the clients of the configured MCP servers for one chatd
// instance.
type Manager struct {
	opts     Options
	instance string
	servers  map[string]*Server

	mu     sync.Mutex
	settle func(context.Context, Settled) error // see OnSettled
	holds  map[string]*call
	sub    *store.Subscription
	closed bool
}

// New returns a manager of servers; it connects to each when its tools are
// first needed.
func New(servers []agent.MCPServer, opts Options) *Manager {
	if opts.Relay == nil {
		opts.Relay = store.NewLocalBus()
	}
	if opts.HoldTTL <= 0 {
		opts.HoldTTL = 15 * time.Minute
	}
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = 10 * time.Second
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 30 * time.Second
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 8
	}
	if opts.MaxHeldPerPrincipal <= 0 {
		opts.MaxHeldPerPrincipal = max(opts.MaxSessions/4, 1)
	}
	if opts.SessionWait <= 0 {
		opts.SessionWait = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: opts, instance: uuid.NewString(), servers: map[string]*Server{}, holds: map[string]*call{}}
	for _, cfg := range servers {
		m.servers[cfg.Name] = m.newServer(cfg)
	}
	return m
}

// Server returns the tool source of the named server, or nil.
func (m *Manager) Server(name string) *Server { return m.servers[name] }

// Close answers cancel to every call held for an answer, and closes every
// session (ending stdio servers).
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	holds := m.holds
	m.holds = map[string]*call{}
	sub := m.sub
	m.mu.Unlock()
	// The servers hear cancel before their sessions close, within reason.
	var ended []<-chan struct{}
	for _, c := range holds {
		ended = append(ended, c.abandon())
	}
	deadline := time.After(5 * time.Second)
	for _, e := range ended {
		select {
		case <-e:
		case <-deadline:
		}
	}
	if sub != nil {
		sub.Close()
	}
	var errs []error
	for _, s := range m.servers {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// Server is one MCP server, an agent.ToolSource.
type Server struct {
	m      *Manager
	cfg    agent.MCPServer
	client *mcp.Client
	cap    *capture
	slots  chan struct{} // one per busy session

	mu       sync.Mutex
	sessions []*session
	bySess   map[*mcp.ClientSession]*session
	tools    []agent.Tool
	stale    bool
}

// session is one MCP session; while busy it serves one call.
type session struct {
	cs      *mcp.ClientSession
	tasks   taskSender // sends the task requests go-sdk lacks
	busy    bool
	closed  bool
	current *call
}

// clientInfo is who chatd says it is to servers.
var clientInfo = &mcp.Implementation{Name: "chatd", Version: "1"}

func (m *Manager) newServer(cfg agent.MCPServer) *Server {
	s := &Server{m: m, cfg: cfg, cap: newCapture(), slots: make(chan struct{}, m.opts.MaxSessions),
		bySess: map[*mcp.ClientSession]*session{}, stale: true}
	s.client = mcp.NewClient(clientInfo, &mcp.ClientOptions{
		ElicitationHandler: s.onElicit,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.mu.Lock()
			s.stale = true
			s.mu.Unlock()
		},
		// chatd fulfils a 2026-07-28 server's input requests itself: the
		// user's answer may arrive on another instance, long after.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			if req.Params != nil {
				m.complete(req.Session, req.Params.ElicitationID)
			}
		},
		Capabilities: clientCapabilities(),
		Logger:       m.opts.Logger.With("mcp_server", cfg.Name),
	})
	return s
}

// baseEnv is what a stdio server gets of chatd's environment unless it
// inherits all of it: enough to find programs and write temporary files.
var baseEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// stdioEnv is a stdio server's environment: the base (or, with
// InheritEnv, chatd's whole environment), then the server's own env. A
// server is a program of someone else's: chatd's keys and CHATD_* settings
// (every tenant's API keys, the Redis password) are not its to read.
func stdioEnv(cfg agent.MCPServer) []string {
	var env []string
	if cfg.InheritEnv {
		env = os.Environ()
	} else {
		for _, k := range baseEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+cfg.Env[k])
	}
	return env
}

// connect opens a new session.
func (s *Server) connect(ctx context.Context) (*session, error) {
	var t mcp.Transport
	var stdio *captureTransport
	var httpBase *http.Client
	switch s.cfg.Transport {
	case agent.TransportStdio:
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = stdioEnv(s.cfg)
		stdio = &captureTransport{inner: &mcp.CommandTransport{Command: cmd}, cap: s.cap}
		t = stdio
	case agent.TransportStreamableHTTP:
		base := http.DefaultTransport
		if s.m.opts.HTTPClient != nil && s.m.opts.HTTPClient.Transport != nil {
			base = s.m.opts.HTTPClient.Transport
		}
		t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &http.Client{
			Transport: &captureRoundTripper{base: base, headers: s.cfg.Headers, cap: s.cap},
		}}
		// chatd's own requests read their responses themselves: nothing
		// of theirs is captured.
		httpBase = &http.Client{Transport: &captureRoundTripper{base: base, headers: s.cfg.Headers}}
	default:
		return nil, fmt.Errorf("mcp server %s: unknown transport %q", s.cfg.Name, s.cfg.Transport)
	}
	cctx, cancel := context.WithTimeout(ctx, s.m.opts.ConnectTimeout)
	defer cancel()
	cs, err := s.client.Connect(cctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: connect: %w", s.cfg.Name, err)
	}
	x := &session{cs: cs}
	if stdio != nil {
		x.tasks = stdio.conn
	} else {
		x.tasks = &httpSender{s: s, x: x, client: httpBase}
	}
	s.mu.Lock()
	s.sessions = append(s.sessions, x)
	s.bySess[cs] = x
	s.mu.Unlock()
	go func() {
		_ = cs.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		x.closed = true
		delete(s.bySess, cs)
		for i, y := range s.sessions {
			if y == x {
				s.sessions = append(s.sessions[:i], s.sessions[i+1:]...)
				break
			}
		}
	}()
	return x, nil
}

// errNoSession is what the model hears of a call that found every session
// of its server busy for SessionWait.
var errNoSession = errors.New("every session of the MCP server is busy")

// acquire returns a session for one call, opening one when fewer than
// MaxSessions are busy, and waiting at most SessionWait for one to free.
func (s *Server) acquire(ctx context.Context) (*session, error) {
	wait := time.NewTimer(s.m.opts.SessionWait)
	defer wait.Stop()
	select {
	case s.slots <- struct{}{}:
	case <-wait.C:
		return nil, fmt.Errorf("mcp server %s: %w: its %d sessions serve other calls, some perhaps waiting for users' answers; try again later",
			s.cfg.Name, errNoSession, s.m.opts.MaxSessions)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	for _, x := range s.sessions {
		if !x.busy && !x.closed {
			x.busy = true
			s.mu.Unlock()
			return x, nil
		}
	}
	s.mu.Unlock()
	x, err := s.connect(ctx)
	if err != nil {
		<-s.slots
		return nil, err
	}
	s.mu.Lock()
	x.busy = true
	s.mu.Unlock()
	return x, nil
}

func (s *Server) release(x *session) {
	s.mu.Lock()
	x.busy, x.current = false, nil
	s.mu.Unlock()
	<-s.slots
}

// anySession returns an open session for listing tools.
func (s *Server) anySession(ctx context.Context) (*session, error) {
	s.mu.Lock()
	for _, x := range s.sessions {
		if !x.closed {
			s.mu.Unlock()
			return x, nil
		}
	}
	s.mu.Unlock()
	return s.connect(ctx)
}

func (s *Server) close() error {
	s.mu.Lock()
	sessions := append([]*session(nil), s.sessions...)
	s.mu.Unlock()
	var errs []error
	for _, x := range sessions {
		if err := x.cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Tools implements agent.ToolSource: the server's allowed tools, listed
// again after the server said the list changed.
func (s *Server) Tools(ctx context.Context) ([]agent.Tool, error) {
	s.mu.Lock()
	if !s.stale {
		tools := s.tools
		s.mu.Unlock()
		return tools, nil
	}
	s.stale = false
	s.mu.Unlock()
	x, err := s.anySession(ctx)
	if err != nil {
		s.markStale()
		return nil, err
	}
	var tools []agent.Tool
	for t, err := range x.cs.Tools(ctx, nil) {
		if err != nil {
			s.markStale()
			return nil, fmt.Errorf("mcp server %s: tools/list: %w", s.cfg.Name, err)
		}
		if !s.allowed(t.Name) {
			continue
		}
		def, err := s.definition(t)
		if err != nil {
			// One odd tool should not take the others away.
			s.m.opts.Logger.Warn("mcp tool left out", "mcp_server", s.cfg.Name, "tool", t.Name, "error", err.Error())
			continue
		}
		tools = append(tools, &tool{s: s, name: t.Name, def: def})
	}
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	return tools, nil
}

func (s *Server) markStale() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
}

func (s *Server) allowed(name string) bool {
	if len(s.cfg.Allow) == 0 {
		return true
	}
	for _, g := range s.cfg.Allow {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// definition is what the model sees of an MCP tool.
func (s *Server) definition(t *mcp.Tool) (agent.ToolDefinition, error) {
	name := s.cfg.Name + "__" + t.Name
	if !toolName.MatchString(name) {
		return agent.ToolDefinition{}, fmt.Errorf("%q is not a function name models accept (1 to 64 letters, digits, _ and -)", name)
	}
	var params json.RawMessage
	if t.InputSchema != nil {
		data, err := json.Marshal(t.InputSchema)
		if err != nil {
			return agent.ToolDefinition{}, fmt.Errorf("inputSchema: %w", err)
		}
		params = data
	}
	desc := t.Description
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	if desc == "" {
		desc = t.Title
	}
	a := t.Annotations
	return agent.ToolDefinition{
		Name: name, Description: desc, Parameters: params,
		// MCP's default for a missing destructiveHint is true, but chatd asks
		// only when the server says so: confirming every tool of a server
		// that does not annotate would make confirms noise.
		Destructive: a != nil && a.DestructiveHint != nil && *a.DestructiveHint && !a.ReadOnlyHint,
	}, nil
}
