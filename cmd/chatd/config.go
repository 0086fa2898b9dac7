package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// config is every CHATD_ variable; the README documents each one.
type config struct {
	Addr             string        `envconfig:"ADDR" default:"127.0.0.1:8080"`
	RedisURL         string        `envconfig:"REDIS_URL"`
	Processors       []string      `envconfig:"PROCESSORS" default:"demo,echo"`
	DefaultProcessor string        `envconfig:"DEFAULT_PROCESSOR" default:"demo"`
	AuthMode         string        `envconfig:"AUTH_MODE" default:"none"`
	APIKeys          string        `envconfig:"API_KEYS"`
	APIKeysFile      string        `envconfig:"API_KEYS_FILE"`
	PrincipalHeader  string        `envconfig:"PRINCIPAL_HEADER" default:"X-Chatd-Principal"`
	AllowAnonymous   bool          `envconfig:"ALLOW_ANONYMOUS" default:"false"`
	ElicitationTTL   time.Duration `envconfig:"ELICITATION_TTL" default:"15m"`
	ThreadTTL        time.Duration `envconfig:"THREAD_TTL" default:"720h"`
	TurnTimeout      time.Duration `envconfig:"TURN_TIMEOUT" default:"60s"`
	HistoryMax       int           `envconfig:"HISTORY_MAX" default:"1000"`
	HistoryWindow    int           `envconfig:"HISTORY_WINDOW" default:"50"`
	MaxBodyBytes     int64         `envconfig:"MAX_BODY_BYTES" default:"1048576"`
	HeartbeatEvery   time.Duration `envconfig:"SSE_HEARTBEAT" default:"15s"`
	ShutdownTimeout  time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"70s"`
	LogLevel         string        `envconfig:"LOG_LEVEL" default:"info"`
	LogFormat        string        `envconfig:"LOG_FORMAT" default:"json"`
}

// loadConfig reads the CHATD_ variables and checks them.
func loadConfig() (config, error) {
	var c config
	if err := envconfig.Process("chatd", &c); err != nil {
		return c, err
	}
	return c, c.validate()
}

func (c config) validate() error {
	var errs []error
	positive := map[string]time.Duration{
		"CHATD_ELICITATION_TTL": c.ElicitationTTL, "CHATD_THREAD_TTL": c.ThreadTTL,
		"CHATD_TURN_TIMEOUT": c.TurnTimeout, "CHATD_SHUTDOWN_TIMEOUT": c.ShutdownTimeout,
	}
	for name, d := range positive {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	if c.HeartbeatEvery < 0 {
		errs = append(errs, errors.New("CHATD_SSE_HEARTBEAT must not be negative"))
	}
	if c.HistoryMax < 1 || c.HistoryWindow < 0 || c.MaxBodyBytes < 1 {
		errs = append(errs, errors.New("CHATD_HISTORY_MAX and CHATD_MAX_BODY_BYTES must be positive, CHATD_HISTORY_WINDOW not negative"))
	}
	switch c.AuthMode {
	case "none":
		if !isLoopback(c.Addr) && !c.AllowAnonymous {
			errs = append(errs, fmt.Errorf("refusing to serve %s without authentication: set CHATD_AUTH_MODE=apikey or header, or CHATD_ALLOW_ANONYMOUS=true", c.Addr))
		}
	case "apikey", "header":
	default:
		errs = append(errs, fmt.Errorf("CHATD_AUTH_MODE %q: want none, apikey or header", c.AuthMode))
	}
	if c.AuthMode == "header" && strings.TrimSpace(c.PrincipalHeader) == "" {
		errs = append(errs, errors.New("CHATD_PRINCIPAL_HEADER must not be empty"))
	}
	switch c.LogFormat {
	case "json", "text":
	default:
		errs = append(errs, fmt.Errorf("CHATD_LOG_FORMAT %q: want json or text", c.LogFormat))
	}
	return errors.Join(errs...)
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
// CHATD_API_KEYS_FILE (one a line; blank lines and # comments skipped).
func (c config) apiKeys() (map[string]string, error) {
	keys := map[string]string{}
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
		keys[principal] = key
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
	return keys, nil
}
