package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"

	"chatd/internal/api"
	"chatd/internal/ratelimit"
	"chatd/internal/render"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// config is every CHATD_ variable; docs/configuration.md documents each
// one. A variable whose default belongs to the package it configures (the
// turn engine's, the store's, the API's) has no default tag: defaultConfig
// takes it from that package, so each default is written once.
type config struct {
	Addr     string `envconfig:"ADDR" default:"127.0.0.1:8080"`
	RedisURL string `envconfig:"REDIS_URL"`
	// Replication: a write is acknowledged once this many replicas have
	// it, waiting at most RedisWaitTimeout.
	RedisWaitReplicas int           `envconfig:"REDIS_WAIT_REPLICAS" default:"0"`
	RedisWaitTimeout  time.Duration `envconfig:"REDIS_WAIT_TIMEOUT"`
	Processors        []string      `envconfig:"PROCESSORS" default:"demo"`
	DefaultProcessor  string        `envconfig:"DEFAULT_PROCESSOR" default:"demo"`
	AuthMode          string        `envconfig:"AUTH_MODE" default:"none"`
	APIKeys           string        `envconfig:"API_KEYS"`
	APIKeysFile       string        `envconfig:"API_KEYS_FILE"`
	PrincipalHeader   string        `envconfig:"PRINCIPAL_HEADER" default:"X-Chatd-Principal"`
	AllowAnonymous    bool          `envconfig:"ALLOW_ANONYMOUS" default:"false"`
	ElicitationTTL    time.Duration `envconfig:"ELICITATION_TTL"`
	ThreadTTL         time.Duration `envconfig:"THREAD_TTL"`
	TurnTimeout       time.Duration `envconfig:"TURN_TIMEOUT"`
	HistoryMax        int           `envconfig:"HISTORY_MAX"`
	HistoryWindow     int           `envconfig:"HISTORY_WINDOW"`
	MaxBodyBytes      int64         `envconfig:"MAX_BODY_BYTES"`
	HeartbeatEvery    time.Duration `envconfig:"SSE_HEARTBEAT"`
	TurnEventsTTL     time.Duration `envconfig:"TURN_EVENTS_TTL"`
	CORSOrigins       []string      `envconfig:"CORS_ORIGINS"`
	ShutdownTimeout   time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"70s"`
	// Connection timeouts: headers, the whole body, one response or one SSE
	// event, an idle keep-alive connection.
	ReadHeaderTimeout time.Duration `envconfig:"READ_HEADER_TIMEOUT" default:"10s"`
	ReadTimeout       time.Duration `envconfig:"READ_TIMEOUT" default:"30s"`
	WriteTimeout      time.Duration `envconfig:"WRITE_TIMEOUT"`
	IdleTimeout       time.Duration `envconfig:"IDLE_TIMEOUT" default:"120s"`
	// Limits on what one request or one thread may hold.
	MaxBlocks       int   `envconfig:"MAX_BLOCKS"`
	MaxJSONDepth    int   `envconfig:"MAX_JSON_DEPTH"`
	HistoryMaxBytes int64 `envconfig:"HISTORY_MAX_BYTES"`
	MemoryMaxBytes  int64 `envconfig:"MEMORY_MAX_BYTES"`
	// Files: one file's bytes, and the bytes of one principal's files.
	MaxFileBytes  int64 `envconfig:"MAX_FILE_BYTES"`
	FilesMaxBytes int64 `envconfig:"FILES_MAX_BYTES"`
	// Rate limits: requests per principal on /v1, failed authentications
	// per client address; "0" disables either.
	RateLimit     ratelimit.Rate `envconfig:"RATE_LIMIT" default:"600/1m"`
	AuthFailLimit ratelimit.Rate `envconfig:"AUTH_FAIL_LIMIT" default:"30/1m"`
	// TrustedProxies are the gateways (IPs or CIDR prefixes) whose
	// X-Forwarded-For names the client failed authentications count against.
	TrustedProxies []string `envconfig:"TRUSTED_PROXIES"`
	// RateLimitDelay holds each refused request this long before its 429
	// (negative: answer at once).
	RateLimitDelay time.Duration `envconfig:"RATE_LIMIT_DELAY"`
	// LockLease is the turn lock's lease, renewed while a turn runs.
	LockLease time.Duration `envconfig:"LOCK_LEASE"`
	// MaxThreads caps the live threads of one principal.
	MaxThreads int `envconfig:"MAX_THREADS"`
	// MaxStreams caps the streams one principal holds open on an instance;
	// SSEBufferBytes the events queued for one stream's client.
	MaxStreams        int    `envconfig:"MAX_STREAMS"`
	SSEBufferBytes    int    `envconfig:"SSE_BUFFER_BYTES"`
	LogLevel          string `envconfig:"LOG_LEVEL" default:"info"`
	LogFormat         string `envconfig:"LOG_FORMAT" default:"json"`
	UI                bool   `envconfig:"UI" default:"true"`
	EntityURLTemplate string `envconfig:"ENTITY_URL_TEMPLATE"`

	// The agents (CHATD_AGENT_*, CHATD_AGENTS_FILE), in agents.go.
	AgentSettings
}

// defaultConfig holds the defaults the packages define; envconfig keeps a
// field that has no default tag and no variable set as it finds it.
func defaultConfig() config {
	t, st, a := turn.DefaultConfig, store.DefaultOptions, api.DefaultConfig
	return config{
		ElicitationTTL: t.ElicitationTTL, TurnTimeout: t.TurnTimeout, HistoryWindow: t.HistoryWindow, LockLease: t.LockLease,
		ThreadTTL: st.ThreadTTL, HistoryMax: st.HistoryMax, HistoryMaxBytes: st.HistoryMaxBytes, MemoryMaxBytes: st.MemoryMaxBytes,
		MaxThreads: st.MaxThreads, FilesMaxBytes: st.FilesMaxBytes, MaxFileBytes: a.MaxFileBytes, TurnEventsTTL: st.TurnEventsTTL, RedisWaitTimeout: st.WaitTimeout,
		MaxBodyBytes: a.MaxBodyBytes, MaxBlocks: a.MaxBlocks, MaxJSONDepth: a.MaxJSONDepth, HeartbeatEvery: a.HeartbeatInterval,
		WriteTimeout: a.WriteTimeout, RateLimitDelay: a.RefusalDelay, MaxStreams: a.MaxStreams, SSEBufferBytes: a.SSEBufferBytes,
	}
}

// loadConfig reads the CHATD_ variables and checks them. envconfig reads the
// process environment itself, which is why run takes no getenv.
func loadConfig() (config, error) {
	c := defaultConfig()
	if err := envconfig.Process("chatd", &c); err != nil {
		var perr *envconfig.ParseError
		if errors.As(err, &perr) {
			// KeyName already carries the prefix.
			return c, fmt.Errorf("CHATD_%s: %q is not a valid %s", strings.TrimPrefix(perr.KeyName, "CHATD_"), perr.Value, kindOf(perr.TypeName))
		}
		return c, err
	}
	return c, c.validate()
}

// kindOf names a config field's Go type the way docs/configuration.md does.
func kindOf(typeName string) string {
	switch typeName {
	case "time.Duration", "Duration":
		return "duration (Go syntax, such as 15m or 60s)"
	case "bool":
		return "boolean (true or false)"
	case "ratelimit.Rate", "Rate":
		return "rate (requests/window such as 600/1m, or 0 to disable)"
	case "int", "int64":
		return "whole number"
	}
	return typeName
}

func (c config) validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	_, _, addrErr := net.SplitHostPort(c.Addr)
	check(addrErr == nil, "CHATD_ADDR %q: want host:port, such as 127.0.0.1:8080", c.Addr)
	check(c.ElicitationTTL >= time.Millisecond, "CHATD_ELICITATION_TTL must be at least 1ms")
	check(c.ThreadTTL >= time.Millisecond, "CHATD_THREAD_TTL must be at least 1ms")
	check(c.TurnTimeout >= time.Millisecond, "CHATD_TURN_TIMEOUT must be at least 1ms")
	check(c.ShutdownTimeout >= c.TurnTimeout,
		"CHATD_SHUTDOWN_TIMEOUT (%s) must be at least CHATD_TURN_TIMEOUT (%s), so shutdown can let running turns finish", c.ShutdownTimeout, c.TurnTimeout)
	check(c.ReadHeaderTimeout >= time.Millisecond, "CHATD_READ_HEADER_TIMEOUT must be at least 1ms")
	check(c.ReadTimeout >= time.Millisecond, "CHATD_READ_TIMEOUT must be at least 1ms")
	check(c.WriteTimeout >= time.Millisecond, "CHATD_WRITE_TIMEOUT must be at least 1ms")
	check(c.IdleTimeout >= time.Millisecond, "CHATD_IDLE_TIMEOUT must be at least 1ms")
	check(c.HeartbeatEvery >= 0, "CHATD_SSE_HEARTBEAT must not be negative (0 disables it)")
	check(c.TurnEventsTTL >= time.Millisecond, "CHATD_TURN_EVENTS_TTL must be at least 1ms")
	for _, origin := range c.CORSOrigins {
		check(validOrigin(strings.TrimSpace(origin)),
			"CHATD_CORS_ORIGINS: %q is not an origin: want scheme://host[:port] with no path, or *", origin)
	}
	if _, err := c.trustedProxies(); err != nil {
		errs = append(errs, err)
	}
	check(c.HistoryMax >= 1, "CHATD_HISTORY_MAX must be at least 1")
	check(c.RedisWaitReplicas >= 0, "CHATD_REDIS_WAIT_REPLICAS must not be negative")
	check(c.RedisWaitTimeout >= time.Millisecond, "CHATD_REDIS_WAIT_TIMEOUT must be at least 1ms")
	check(c.HistoryWindow >= 0, "CHATD_HISTORY_WINDOW must not be negative")
	check(c.MaxBodyBytes >= 1, "CHATD_MAX_BODY_BYTES must be at least 1")
	check(c.LockLease >= 30*time.Millisecond, "CHATD_LOCK_LEASE must be at least 30ms")
	check(c.MaxThreads >= 1, "CHATD_MAX_THREADS must be at least 1")
	check(c.MaxStreams >= 1, "CHATD_MAX_STREAMS must be at least 1")
	check(c.SSEBufferBytes >= 1024, "CHATD_SSE_BUFFER_BYTES must be at least 1024")
	check(c.MaxBlocks >= 1, "CHATD_MAX_BLOCKS must be at least 1")
	check(c.MaxJSONDepth >= 2, "CHATD_MAX_JSON_DEPTH must be at least 2 (a turn's body nests two levels)")
	check(c.HistoryMaxBytes >= 1, "CHATD_HISTORY_MAX_BYTES must be at least 1")
	check(c.MemoryMaxBytes >= 1, "CHATD_MEMORY_MAX_BYTES must be at least 1")
	check(c.MaxFileBytes >= 1, "CHATD_MAX_FILE_BYTES must be at least 1")
	check(c.FilesMaxBytes >= 1, "CHATD_FILES_MAX_BYTES must be at least 1")
	check(c.AgentTextFileBytes >= 1, "CHATD_AGENT_TEXT_FILE_BYTES must be at least 1")
	switch c.AuthMode {
	case "none":
		check(addrErr != nil || isLoopback(c.Addr) || c.AllowAnonymous,
			"refusing to serve %s without authentication: set CHATD_AUTH_MODE=apikey or header, or CHATD_ALLOW_ANONYMOUS=true", c.Addr)
	case "apikey":
		check(c.APIKeys != "" || c.APIKeysFile != "", "CHATD_AUTH_MODE=apikey needs keys in CHATD_API_KEYS or CHATD_API_KEYS_FILE")
	case "header":
		check(strings.TrimSpace(c.PrincipalHeader) != "", "CHATD_PRINCIPAL_HEADER must not be empty")
	default:
		errs = append(errs, fmt.Errorf("CHATD_AUTH_MODE %q: want none, apikey or header", c.AuthMode))
	}
	check(c.LogFormat == "json" || c.LogFormat == "text", "CHATD_LOG_FORMAT %q: want json or text", c.LogFormat)
	if err := render.CheckEntityURLTemplate(c.EntityURLTemplate); err != nil {
		errs = append(errs, fmt.Errorf("CHATD_ENTITY_URL_TEMPLATE: %w", err))
	}
	return errors.Join(errs...)
}

// trustedProxies parses CHATD_TRUSTED_PROXIES: comma-separated IP
// addresses (a prefix of one address) and CIDR prefixes.
func (c config) trustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, entry := range trimAll(c.TrustedProxies) {
		if p, err := netip.ParsePrefix(entry); err == nil {
			out = append(out, p.Masked())
			continue
		}
		addr, err := netip.ParseAddr(entry)
		if err != nil {
			return nil, fmt.Errorf("CHATD_TRUSTED_PROXIES: %q is not an IP address or a CIDR prefix (such as 10.0.0.0/8)", entry)
		}
		addr = addr.Unmap()
		out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
	}
	return out, nil
}

// isLoopback reports whether addr only listens on a loopback interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// apiKeys reads principal:key pairs from CHATD_API_KEYS (comma-separated) and
// CHATD_API_KEYS_FILE (one a line; blank lines and # comments skipped). A
// principal may have several keys (to rotate them); a key that belongs to
// two principals is refused, since a request bearing it would be either.
func (c config) apiKeys() ([]api.APIKey, error) {
	var keys []api.APIKey
	owner := map[string]string{}
	add := func(entry, where string) error {
		entry = strings.TrimSpace(entry)
		if entry == "" || strings.HasPrefix(entry, "#") {
			return nil
		}
		principal, key, ok := strings.Cut(entry, ":")
		principal, key = strings.TrimSpace(principal), strings.TrimSpace(key)
		if !ok || principal == "" || key == "" {
			return fmt.Errorf("%s: an entry is not principal:key", where)
		}
		if prev, seen := owner[key]; seen && prev != principal {
			return fmt.Errorf("%s: the same key is given to %s and %s", where, prev, principal)
		}
		owner[key] = principal
		keys = append(keys, api.APIKey{Principal: principal, Key: key})
		return nil
	}
	for _, entry := range strings.Split(c.APIKeys, ",") {
		if err := add(entry, "CHATD_API_KEYS"); err != nil {
			return nil, err
		}
	}
	if c.APIKeysFile != "" {
		f, err := os.Open(c.APIKeysFile)
		if err != nil {
			return nil, fmt.Errorf("CHATD_API_KEYS_FILE: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			if err := add(sc.Text(), fmt.Sprintf("CHATD_API_KEYS_FILE line %d", line)); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("CHATD_API_KEYS_FILE: %w", err)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("CHATD_AUTH_MODE=apikey needs keys in CHATD_API_KEYS or CHATD_API_KEYS_FILE")
	}
	return keys, nil
}

// validOrigin reports whether s is "*" or an origin as browsers send it:
// scheme://host[:port], nothing more.
func validOrigin(s string) bool {
	if s == "*" {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil
}
