// Package api serves chatd's HTTP JSON API: threads, turns, history and the
// elicitation round trip, with problem+json errors, Server-Sent Events,
// authentication, metrics and request logs. routes.go lists every endpoint.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"go.opentelemetry.io/otel/trace"

	"chatd/internal/processor"
	"chatd/internal/protocol/deepchat"
	"chatd/internal/ratelimit"
	"chatd/internal/render"
	"chatd/internal/store"
	"chatd/internal/throttle"
	"chatd/internal/turn"
)

// Store is what the API needs from persistence; internal/store's Memory and
// Redis both provide it. Errors are store's sentinels, wrapped. Turns go
// through internal/turn, which declares what it needs of the same store.
type Store interface {
	turn.Store
	FileStore
	// CreateThread persists a new thread.
	CreateThread(ctx context.Context, t store.Thread) error
	// DeleteThread removes the thread and everything it holds; store.ErrNotFound.
	DeleteThread(ctx context.Context, threadID, principal string) error
	// UpdateThread patches a thread's title and metadata: store.ErrNotFound,
	// ErrMetadataTooLarge.
	UpdateThread(ctx context.Context, threadID, principal string, patch store.ThreadPatch) (store.Thread, error)
	// ListThreads returns a page of the principal's threads, most recently
	// updated first: store.ErrUnknownCursor.
	ListThreads(ctx context.Context, principal string, limit int, cursor string) (store.ThreadList, error)
	// History returns a page of messages: store.ErrNotFound, ErrUnknownCursor.
	History(ctx context.Context, threadID, principal string, limit int, before string) (store.Page, error)
	// HistoryOf returns a page of one branch: store.ErrNotFound,
	// ErrUnknownCursor.
	HistoryOf(ctx context.Context, threadID, principal string, req store.PageRequest) (store.Page, error)
	// Ping reports whether the store is reachable: store.ErrUnavailable.
	Ping(ctx context.Context) error
}

// UI is a web page served beside the API: GET on each of its Paths.
type UI interface {
	http.Handler
	Paths() []string
}

// Config holds the API's tunables; cmd/chatd fills it from the environment.
// The settings of turns themselves are the engine's (turn.Config).
type Config struct {
	MaxBodyBytes int64
	// MaxFileBytes caps an uploaded file's bytes (413 beyond); its
	// upload's body may be that large, whatever MaxBodyBytes.
	MaxFileBytes int64
	// MaxBlocks caps the content blocks of one message (422 beyond).
	MaxBlocks int
	// MaxJSONDepth caps the nesting of any request body (400 beyond).
	MaxJSONDepth int
	// HeartbeatInterval spaces the comment heartbeats of idle streams; a
	// negative value disables them.
	HeartbeatInterval time.Duration
	// CORSOrigins are the origins browsers may call chatd from: exact
	// origins, or "*" for any; empty turns CORS off.
	CORSOrigins []string
	// PrincipalHeader is the header a gateway names the principal in
	// (header auth), allowed in CORS requests.
	PrincipalHeader string
	// WriteTimeout bounds writing one SSE event (and the drain of what is
	// queued when a stream ends) to a client that does not read; the
	// stream is then dropped while its turn completes.
	WriteTimeout time.Duration
	// RefusalDelay is how long a request refused by a rate limit (429)
	// waits for its answer, so a client that retries at once, without
	// waiting for Retry-After, sends a few requests a second instead of
	// thousands that others' requests queue behind. At most
	// MaxHeldRefusals wait at a time; the rest are answered at once. A
	// negative delay answers every refusal at once.
	RefusalDelay    time.Duration
	MaxHeldRefusals int
	// TrustedProxies are the gateways whose X-Forwarded-For names the
	// client whose failed authentications are counted (see clientAddr);
	// a request from any other peer is counted against the peer.
	TrustedProxies []netip.Prefix // MaxStreams caps the streams one principal holds open on this
	// instance at once: reattach streams and streamed turns of every
	// protocol alike (429 beyond).
	MaxStreams int
	// SSEBufferBytes bounds the encoded events queued for one stream's
	// client; a client that falls further behind is dropped, its turn
	// going on without it.
	SSEBufferBytes int
}

// DefaultConfig is the API's defaults, those of the CHATD_ variables that
// set them.
var DefaultConfig = Config{
	MaxBodyBytes:      1 << 20,
	MaxFileBytes:      10 << 20,
	MaxBlocks:         256,
	MaxJSONDepth:      64,
	HeartbeatInterval: 15 * time.Second,
	WriteTimeout:      30 * time.Second,
	RefusalDelay:      250 * time.Millisecond,
	MaxHeldRefusals:   1024,
	MaxStreams:        32,
	SSEBufferBytes:    1 << 20,
}

// withDefaults fills unset (zero) fields from DefaultConfig, so a partial
// Config never means "no body allowed" or "no time to write".
func (c Config) withDefaults() Config {
	d := DefaultConfig
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = d.MaxFileBytes
	}
	if c.MaxBlocks <= 0 {
		c.MaxBlocks = d.MaxBlocks
	}
	if c.MaxJSONDepth <= 0 {
		c.MaxJSONDepth = d.MaxJSONDepth
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = d.HeartbeatInterval
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.RefusalDelay == 0 {
		c.RefusalDelay = d.RefusalDelay
	}
	if c.MaxHeldRefusals <= 0 {
		c.MaxHeldRefusals = d.MaxHeldRefusals
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = d.MaxStreams
	}
	if c.SSEBufferBytes <= 0 {
		c.SSEBufferBytes = d.SSEBufferBytes
	}
	return c
}

// Deps are what a Server is built from.
type Deps struct {
	Store Store
	// Engine runs the turns; cmd/chatd builds it over the same store, with
	// the Metrics as its observer.
	Engine     *turn.Engine
	Processors *processor.Registry
	Auth       Authenticator
	Logger     *slog.Logger
	Metrics    *Metrics
	Config     Config
	// Renderer turns messages into HTML for ?render=html; nil gets one
	// without an entity URL template.
	Renderer *render.Renderer
	// UI serves the chat page at /; nil serves none.
	UI UI
	// RateLimit limits requests per principal on /v1 and AuthFailLimit
	// failed authentications per client address; nil: no limit.
	RateLimit     *ratelimit.Limiter
	AuthFailLimit *ratelimit.Limiter
	// TracerProvider traces requests, and through their spans everything
	// they start (turns, store calls, model and tool calls); nil: no spans,
	// at no cost.
	TracerProvider trace.TracerProvider
}

// Server is chatd's HTTP handler.
type Server struct {
	store      Store
	processors *processor.Registry
	auth       Authenticator
	log        *slog.Logger
	metrics    *Metrics
	cfg        Config
	renderer   *render.Renderer
	ui         UI
	handler    http.Handler
	engine     *turn.Engine
	// storeErrLog limits the lines logged for an unreachable store.
	storeErrLog   *throttle.Log
	rateLimit     *ratelimit.Limiter
	authFailLimit *ratelimit.Limiter
	// heldRefusals counts the refusals waiting out RefusalDelay.
	heldRefusals chan struct{}
	// tracer starts the requests' spans; nil without tracing.
	tracer  trace.Tracer // streams counts each principal's open streams (Config.MaxStreams).
	streams *streamCounts
}

// NewServer wires the routes. Missing optional deps get defaults: no auth
// (one anonymous principal), a discarding logger, a private metrics registry.
func NewServer(d Deps) *Server {
	s := &Server{
		store:      d.Store,
		processors: d.Processors,
		auth:       d.Auth,
		log:        d.Logger,
		metrics:    d.Metrics,
		cfg:        d.Config,
		renderer:   d.Renderer,
		ui:         d.UI,
		// One line a second: enough to see an outage begin and end.
		storeErrLog:   throttle.NewLog(time.Second),
		engine:        d.Engine,
		rateLimit:     d.RateLimit,
		authFailLimit: d.AuthFailLimit,
	}
	if d.TracerProvider != nil {
		s.tracer = d.TracerProvider.Tracer(tracerName)
	}
	if s.auth == nil {
		s.auth = AnonymousAuth{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.renderer == nil {
		// Without a template New cannot fail.
		s.renderer, _ = render.New(render.Options{})
	}
	s.cfg = s.cfg.withDefaults()
	s.heldRefusals = make(chan struct{}, s.cfg.MaxHeldRefusals)
	s.streams = newStreamCounts(s.cfg.MaxStreams)
	s.handler = s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// handlerFunc is a handler that returns its error for one place to write.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h, writing any error it returns as problem+json.
func (s *Server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// writeError writes err as problem+json. Clients see a safe message; the
// wrapped cause is logged only for server-side failures.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if isClientGone(r, err) {
		// Nobody is left to read a problem: the status alone, for the
		// request log and metrics.
		w.WriteHeader(statusClientGone)
		return
	}
	p := problemFor(err)
	s.observeError(r, p, err)
	body, mErr := marshal(p)
	if mErr != nil {
		body = []byte(internalProblem)
		p.Status = http.StatusInternalServerError
	}
	if challenge := s.auth.Challenge(); p.Status == http.StatusUnauthorized && challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	if isDeepChat(r) {
		if body, mErr = marshal(deepchat.Answer{Error: deepChatError(p)}); mErr != nil {
			body = []byte(`{"error":"internal error"}`)
		}
		writeBody(w, p.Status, jsonType, body)
		return
	}
	writeBody(w, p.Status, problemType, body)
}

func (s *Server) observeError(r *http.Request, p Problem, err error) {
	if p.Status < 500 || isClientGone(r, err) {
		return
	}
	attrs := []slog.Attr{
		slog.String("request_id", requestID(r.Context())),
		slog.String("code", p.Code),
		slog.String("error", err.Error()),
	}
	if errors.Is(err, store.ErrUnavailable) {
		s.metrics.storeErrors.Inc()
		ok, suppressed := s.storeErrLog.Allow(time.Now())
		if !ok {
			return
		}
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "request failed", attrs...)
}

const problemType = "application/problem+json"

// internalProblem is written when a problem itself fails to encode.
const internalProblem = `{"type":"urn:chatd:problem:internal","title":"Internal error","status":500,"detail":"internal error","code":"internal"}`
