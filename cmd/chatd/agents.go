package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"chatd/internal/mcptools"
	"chatd/internal/processor"
	"chatd/internal/processor/agent"
	"chatd/internal/processor/demo"
	"chatd/internal/processor/echo"
	"chatd/internal/processor/remote"
	"chatd/internal/store"
)

// AgentSettings are the variables of the agent processors, part of config.
type AgentSettings struct {
	// The agent processor "agent", enabled through CHATD_PROCESSORS.
	AgentBaseURL string `envconfig:"AGENT_BASE_URL"`
	AgentModel   string `envconfig:"AGENT_MODEL"`
	AgentAPIKey  string `envconfig:"AGENT_API_KEY"`
	// AgentH2C speaks HTTP/2 without TLS to an http:// AgentBaseURL.
	AgentH2C          bool   `envconfig:"AGENT_H2C"`
	AgentSystemPrompt string `envconfig:"AGENT_SYSTEM_PROMPT"`
	AgentAskUser      bool   `envconfig:"AGENT_ASK_USER" default:"true"`
	// AgentInputs are the kinds of blocks the agent's model is given as
	// themselves (image, audio, file) rather than summaries.
	AgentInputs []string `envconfig:"AGENT_INPUTS"`
	// AgentTextFileBytes bounds the text of a text file or resource any
	// agent's model is given.
	AgentTextFileBytes int `envconfig:"AGENT_TEXT_FILE_BYTES" default:"102400"`
	// AgentsFile defines more agents and remote processors, each a
	// processor named by its name.
	AgentsFile string `envconfig:"AGENTS_FILE"`
}

// builtins are the processors chatd ships besides agents; CHATD_PROCESSORS
// picks from them. Register a new processor here.
var builtins = map[string]func() processor.Processor{
	"demo": func() processor.Processor { return demo.New() },
	"echo": func() processor.Processor { return echo.New() },
}

// envAgent is the name of the agent configured by CHATD_AGENT_* variables.
const envAgent = "agent"

// newRegistry builds the enabled processors. The MCP servers of the agents
// file get clients in tools, which the caller closes on shutdown; relay
// reaches the other instances (for answers to a server's question held on
// one of them).
func newRegistry(cfg config, logger *slog.Logger, relay mcptools.Relay, files agent.FileReader) (reg *processor.Registry, tools *mcptools.Manager, err error) {
	// The agents file is read even when none of its processors is enabled:
	// a bad file is a mistake to hear of now, not when someone enables it.
	var file *fileProcessors
	if cfg.AgentsFile != "" {
		if file, err = loadFileProcessors(cfg.AgentsFile, logger, relay, cfg); err != nil {
			return nil, nil, fmt.Errorf("CHATD_AGENTS_FILE: %w", err)
		}
		tools = file.tools
		defer func() {
			if err != nil {
				_ = tools.Close()
				tools = nil
			}
		}()
	}
	enabled := map[string]processor.Processor{}
	for _, name := range cfg.Processors {
		name = strings.TrimSpace(name)
		var (
			p   processor.Processor
			err error
		)
		switch build, builtin := builtins[name]; {
		case builtin:
			p = build()
		case name == envAgent:
			p, err = cfg.envAgent(files)
		case file.has(name):
			p, err = file.build(name, cfg, files)
		default:
			return nil, nil, fmt.Errorf("CHATD_PROCESSORS: unknown processor %q (built-ins: agent, demo, echo; or an agent or remote processor of CHATD_AGENTS_FILE)", name)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("processor %q: %w", name, err)
		}
		enabled[name] = p
	}
	reg, err = processor.NewRegistry(enabled, cfg.DefaultProcessor)
	if err != nil {
		return nil, nil, fmt.Errorf("CHATD_PROCESSORS, CHATD_DEFAULT_PROCESSOR: %w", err)
	}
	return reg, tools, nil
}

// fileProcessors are the processors of the agents file, by name: its
// agents, with clients of their MCP servers in tools, and its remote
// processors.
type fileProcessors struct {
	agents  map[string]agent.FileAgent
	remotes map[string]agent.FileRemote
	tools   *mcptools.Manager
}

func loadFileProcessors(filename string, logger *slog.Logger, relay mcptools.Relay, cfg config) (*fileProcessors, error) {
	f, err := agent.LoadFile(filename, os.Getenv)
	if err != nil {
		return nil, err
	}
	fp := &fileProcessors{agents: map[string]agent.FileAgent{}, remotes: map[string]agent.FileRemote{}}
	for i, a := range f.Agents {
		if isBuiltin(a.Name) {
			return nil, fmt.Errorf("%s:%d: agents[%d].name: %q is the name of a built-in processor", filename, a.Line, i, a.Name)
		}
		fp.agents[a.Name] = a
	}
	for i, r := range f.RemoteProcessors {
		if isBuiltin(r.Name) {
			return nil, fmt.Errorf("%s:%d: remote_processors[%d].name: %q is the name of a built-in processor", filename, r.Line, i, r.Name)
		}
		fp.remotes[r.Name] = r
	}
	fp.tools = mcptools.New(f.MCPServers, mcptools.Options{Relay: relay, HoldTTL: cfg.ElicitationTTL, Logger: logger})
	return fp, nil
}

func isBuiltin(name string) bool {
	_, taken := builtins[name]
	return taken || name == envAgent
}

// has reports whether name is a processor of the file; a nil
// fileProcessors (no file) has none.
func (fp *fileProcessors) has(name string) bool {
	if fp == nil {
		return false
	}
	_, isAgent := fp.agents[name]
	_, isRemote := fp.remotes[name]
	return isAgent || isRemote
}

func (fp *fileProcessors) build(name string, cfg config, files agent.FileReader) (processor.Processor, error) {
	if r, ok := fp.remotes[name]; ok {
		return remote.New(r.Config)
	}
	fa := fp.agents[name]
	fa.Config.Files, fa.Config.TextFileBytes = files, cfg.AgentTextFileBytes
	for _, server := range fa.MCP {
		fa.Config.Tools = append(fa.Config.Tools, fp.tools.Server(server))
	}
	return agent.New(fa.Config)
}

// envAgent builds the agent of the CHATD_AGENT_* variables.
func (c config) envAgent(files agent.FileReader) (*agent.Agent, error) {
	if c.AgentBaseURL == "" || c.AgentModel == "" {
		return nil, errors.New("set CHATD_AGENT_BASE_URL (such as http://127.0.0.1:11434/v1) and CHATD_AGENT_MODEL")
	}
	a, err := agent.New(agent.Config{
		BaseURL: c.AgentBaseURL, Model: c.AgentModel, APIKey: c.AgentAPIKey, H2C: c.AgentH2C, SystemPrompt: c.AgentSystemPrompt,
		MaxSteps: agent.DefaultMaxSteps, HistoryWindow: agent.DefaultHistoryWindow, AskUser: c.AgentAskUser,
		Inputs: trimAll(c.AgentInputs), TextFileBytes: c.AgentTextFileBytes, Files: files,
	})
	if err != nil {
		return nil, fmt.Errorf("CHATD_AGENT_*: %w", err)
	}
	return a, nil
}

// wholeFiles is what the agents need of the store: a file's bytes whole,
// since a model's request carries them encoded.
type wholeFiles interface {
	GetFile(ctx context.Context, threadID, principal, fileID string) (store.File, []byte, error)
}

// storeFiles reads the agents' files from the store.
type storeFiles struct{ st wholeFiles }

func (s storeFiles) ReadFile(ctx context.Context, threadID, principal, fileID string) (agent.StoredFile, error) {
	f, data, err := s.st.GetFile(ctx, threadID, principal, fileID)
	if err != nil {
		return agent.StoredFile{}, err
	}
	return agent.StoredFile{Name: f.Name, MIMEType: f.MIMEType, Data: data}, nil
}
