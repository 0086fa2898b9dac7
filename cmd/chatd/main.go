// Command chatd serves the chatd HTTP API. Configuration comes from CHATD_*
// environment variables, each documented in docs/configuration.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"chatd/internal/api"
	"chatd/internal/elicit"
	"chatd/internal/mcptools"
	"chatd/internal/processor"
	"chatd/internal/ratelimit"
	"chatd/internal/render"
	"chatd/internal/serve"
	"chatd/internal/store"
	"chatd/internal/telemetry"
	"chatd/internal/turn"
	"chatd/internal/ui"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal starts a graceful shutdown, the default action
	// returns: a second SIGTERM or SIGINT ends the process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chatd:", err)
		os.Exit(1)
	}
}

// closingStore is the store run serves from and closes on shutdown.
type closingStore interface {
	api.Store
	wholeFiles
	Close() error
}

// run serves until ctx is cancelled, then shuts down gracefully: it stops
// accepting connections, lets running turns finish and persist, and closes
// the store. Logs go to logOut.
func run(ctx context.Context, logOut io.Writer) error {
	cfg, err := loadConfig()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger, err := newLogger(cfg, logOut)
	if err != nil {
		return err
	}
	tracing, err := telemetry.NewProvider(ctx, os.Getenv)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		// A fresh context: the serving one is cancelled by now, and the last
		// spans are worth a moment to flush.
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(flushCtx); err != nil {
			logger.Warn("flushing traces", "error", err.Error())
		}
	}()
	stores, err := newStore(cfg, tracing.TracerProvider != nil)
	if err != nil {
		return err
	}
	st := stores.store
	defer st.Close()
	registry, mcpTools, err := newRegistry(cfg, logger, stores.relay, storeFiles{st})
	if err != nil {
		return err
	}
	if mcpTools != nil {
		// Closed after the turns drained (defers run last in, first out):
		// calls still held for an answer are answered cancel.
		defer mcpTools.Close()
	}
	warnIfUnreachable(ctx, st, logger)
	server, err := newServer(cfg, logger, stores, registry, mcpTools, tracing.TracerProvider)
	if err != nil {
		return err
	}
	return listenAndServe(ctx, cfg, logger, server, registry)
}

// warnIfUnreachable tells the operator now of a store that cannot be
// reached yet: no reason to refuse to start, since it may come up later.
func warnIfUnreachable(ctx context.Context, st api.Store, logger *slog.Logger) {
	pingCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := st.Ping(pingCtx); err != nil {
		logger.Warn("store not reachable; /readyz fails and requests answer 503 until it is", "error", err.Error())
	}
}

// newServer builds the turn engine and the API over the store.
func newServer(cfg config, logger *slog.Logger, stores storage, registry *processor.Registry, mcpTools *mcptools.Manager,
	tp trace.TracerProvider) (*api.Server, error) {
	auth, err := newAuth(cfg)
	if err != nil {
		return nil, err
	}
	renderer, err := render.New(render.Options{EntityURLTemplate: cfg.EntityURLTemplate})
	if err != nil {
		return nil, fmt.Errorf("configuration: CHATD_ENTITY_URL_TEMPLATE: %w", err)
	}
	var page api.UI
	if cfg.UI {
		if page, err = ui.New(ui.Options{EntityURLTemplate: cfg.EntityURLTemplate}); err != nil {
			return nil, fmt.Errorf("chat page: %w", err)
		}
	}
	proxies, err := cfg.trustedProxies()
	if err != nil {
		return nil, err
	}
	st, counter := stores.store, stores.counter
	metrics := api.NewMetrics()
	engine := turn.New(turn.Deps{
		Store: st, Processors: registry, Relay: stores.relay, Observer: metrics, Logger: logger,
		Config: turn.Config{ElicitationTTL: cfg.ElicitationTTL, TurnTimeout: cfg.TurnTimeout, HistoryWindow: cfg.HistoryWindow,
			LockLease: cfg.LockLease},
	})
	if mcpTools != nil {
		mcpTools.OnSettled(answerSettled(engine))
	}
	return api.NewServer(api.Deps{
		Store: st, Engine: engine, Processors: registry, Auth: auth, Logger: logger, Metrics: metrics,
		TracerProvider: tp,
		RateLimit:      ratelimit.New(cfg.RateLimit, counter, logger),
		AuthFailLimit:  ratelimit.New(cfg.AuthFailLimit, counter, logger),
		Renderer:       renderer,
		UI:             page,
		Config: api.Config{
			MaxBodyBytes: cfg.MaxBodyBytes, MaxFileBytes: cfg.MaxFileBytes, HeartbeatInterval: heartbeat(cfg.HeartbeatEvery), WriteTimeout: cfg.WriteTimeout,
			MaxBlocks: cfg.MaxBlocks, MaxJSONDepth: cfg.MaxJSONDepth, RefusalDelay: refusalDelay(cfg.RateLimitDelay),
			CORSOrigins: trimAll(cfg.CORSOrigins), PrincipalHeader: cfg.PrincipalHeader, TrustedProxies: proxies,
			MaxStreams: cfg.MaxStreams, SSEBufferBytes: cfg.SSEBufferBytes,
		},
	}), nil
}

// listenAndServe listens and serves handler until ctx is cancelled, then shuts the
// HTTP server down, draining running turns.
func listenAndServe(ctx context.Context, cfg config, logger *slog.Logger, handler http.Handler, registry *processor.Registry) error {
	httpServer := serve.New(handler, serve.Timeouts{
		ReadHeader: cfg.ReadHeaderTimeout, Read: cfg.ReadTimeout, Write: cfg.WriteTimeout, Idle: cfg.IdleTimeout,
	}, slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	storeKind := "embedded"
	if cfg.RedisURL != "" {
		storeKind = "redis"
	}
	logger.Info("chatd listening", "addr", ln.Addr().String(), "store", storeKind,
		"processors", registry.Names(), "default_processor", registry.Default(), "auth_mode", cfg.AuthMode)

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}

	logger.Info("shutting down: draining running turns")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// Shutdown waits for every running handler, and a turn runs inside its
	// handler even after its client has gone, so this drains the turns.
	// Idle connections and those still sending headers or a body are
	// closed at once.
	errs := []error{httpServer.Shutdown(shutdownCtx)}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, err)
	}
	logger.Info("chatd stopped")
	return errors.Join(errs...)
}

func newLogger(cfg config, out io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, fmt.Errorf("CHATD_LOG_LEVEL %q: want debug, info, warn or error", cfg.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(telemetry.NewLogHandler(slog.NewTextHandler(out, opts))), nil
	}
	return slog.New(telemetry.NewLogHandler(slog.NewJSONHandler(out, opts))), nil
}

func newAuth(cfg config) (api.Authenticator, error) {
	switch cfg.AuthMode {
	case "apikey":
		keys, err := cfg.apiKeys()
		if err != nil {
			return nil, err
		}
		return api.NewAPIKeyAuth(keys)
	case "header":
		return api.HeaderAuth{Header: cfg.PrincipalHeader}, nil
	default:
		return api.AnonymousAuth{}, nil
	}
}

// storage is the store run serves from, with the relay the instances reach
// each other through and the counter they share the rate limits' counts on
// (nil: each instance counts alone).
type storage struct {
	store   closingStore
	relay   mcptools.Relay
	counter ratelimit.Counter
}

// newStore opens the Redis of CHATD_REDIS_URL, with its relay and rate
// counter; without one, the embedded store and a relay within this process.
func newStore(cfg config, tracing bool) (storage, error) {
	opts := store.Options{ThreadTTL: cfg.ThreadTTL, HistoryMax: cfg.HistoryMax,
		HistoryMaxBytes: cfg.HistoryMaxBytes, MemoryMaxBytes: cfg.MemoryMaxBytes, MaxThreads: cfg.MaxThreads, FilesMaxBytes: cfg.FilesMaxBytes, TurnEventsTTL: cfg.TurnEventsTTL,
		WaitReplicas: cfg.RedisWaitReplicas, WaitTimeout: cfg.RedisWaitTimeout, Trace: tracing}
	if cfg.RedisURL == "" {
		return storage{store: store.NewMemory(opts), relay: store.NewLocalBus()}, nil
	}
	st, err := store.OpenRedis(cfg.RedisURL, opts)
	if err != nil {
		return storage{}, fmt.Errorf("CHATD_REDIS_URL: %w", err)
	}
	return storage{store: st, relay: st.Relay(), counter: st.RateCounter()}, nil
}

// trimAll trims each of a list variable's items.
func trimAll(items []string) []string {
	out := make([]string, 0, len(items))
	for _, item := range items {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// heartbeat maps CHATD_SSE_HEARTBEAT to api.Config.HeartbeatInterval, where
// zero means the default: "0" disables heartbeats, a negative interval.
func heartbeat(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// refusalDelay maps CHATD_RATE_LIMIT_DELAY to api.Config.RefusalDelay, where
// zero means the default: "0" answers refusals at once, like a negative
// value.
func refusalDelay(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// answerSettled answers a URL-mode question accept for the user when its
// MCP server says the user finished on the page.
func answerSettled(engine *turn.Engine) func(context.Context, mcptools.Settled) error {
	return func(ctx context.Context, q mcptools.Settled) error {
		return engine.Answer(ctx, turn.Answer{ThreadID: q.ThreadID, Principal: q.Principal, ElicitationID: q.ElicitationID,
			Result: elicit.Result{Action: elicit.Accept}})
	}
}
