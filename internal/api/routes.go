package api

import (
	"net/http"
	"strings"

	chatd "chatd"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/cors"
)

// routes is the whole API surface.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.observe)
	// HEAD is served by every GET route (without the body, which net/http
	// drops), as RFC 9110 expects of a GET resource.
	r.Use(middleware.GetHead)
	if len(s.cfg.CORSOrigins) > 0 {
		r.Use(s.cors())
	}
	r.NotFound(s.handle(func(http.ResponseWriter, *http.Request) error {
		return errorf(http.StatusNotFound, "not_found", "no such route")
	}).ServeHTTP)
	r.MethodNotAllowed(s.handle(func(w http.ResponseWriter, req *http.Request) error {
		allowed := allowedMethods(r, req.URL.Path)
		if len(allowed) == 0 {
			// chi lands here for any unknown method, even on a path it
			// does not serve.
			return errorf(http.StatusNotFound, "not_found", "no such route")
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return errorf(http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this route; allowed: %s", strings.Join(allowed, ", "))
	}).ServeHTTP)

	r.Method(http.MethodGet, "/healthz", s.handle(s.handleHealthz))
	r.Method(http.MethodGet, "/readyz", s.handle(s.handleReadyz))
	r.Method(http.MethodGet, "/metrics", s.metrics.Handler())
	r.Get("/openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, http.StatusOK, "application/yaml", chatd.OpenAPI)
	})

	r.Get("/deep-chat/chatd.js", handleDeepChatScript)

	if s.ui != nil {
		for _, path := range s.ui.Paths() {
			r.Method(http.MethodGet, path, s.ui)
			r.Method(http.MethodHead, path, s.ui)
		}
	}

	r.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate)
		r.Method(http.MethodGet, "/processors", s.handle(s.handleListProcessors))
		r.Method(http.MethodGet, "/threads", s.handle(s.handleListThreads))
		r.Method(http.MethodPost, "/threads", s.handle(s.handleCreateThread))
		r.Method(http.MethodGet, "/threads/{thread_id}", s.handle(s.handleGetThread))
		r.Method(http.MethodPatch, "/threads/{thread_id}", s.handle(s.handleUpdateThread))
		r.Method(http.MethodDelete, "/threads/{thread_id}", s.handle(s.handleDeleteThread))
		r.Method(http.MethodPost, "/threads/{thread_id}/files", s.handle(s.handleUploadFile))
		r.Method(http.MethodGet, "/threads/{thread_id}/files/{file_id}", s.handle(s.handleGetFile))
		r.Method(http.MethodDelete, "/threads/{thread_id}/files/{file_id}", s.handle(s.handleDeleteFile))
		r.Method(http.MethodPost, "/threads/{thread_id}/turns", s.limitStreams(wantsStream, s.handle(s.handleTurn)))
		r.Method(http.MethodPost, "/threads/{thread_id}/cancel", s.handle(s.handleCancel))
		r.Method(http.MethodGet, "/threads/{thread_id}/turns/{turn_id}/events", s.limitStreams(alwaysStreams, s.handle(s.handleTurnEvents)))
		r.Method(http.MethodGet, "/threads/{thread_id}/messages", s.handle(s.handleHistory))
		r.Method(http.MethodPost, "/threads/{thread_id}/messages/{message_id}/regenerate", s.limitStreams(wantsStream, s.handle(s.handleRegenerate)))
		r.Method(http.MethodPost, "/threads/{thread_id}/elicitations/{elicitation_id}", s.limitStreams(wantsStream, s.handle(s.handleAnswer)))
		// The frontends' own protocols, over the same turns. Every route
		// that answers with a stream counts it against the principal's
		// CHATD_MAX_STREAMS (limitStreams).
		r.Method(http.MethodPost, "/ai-sdk/chat", s.limitStreams(alwaysStreams, s.handle(s.handleAISDKChat)))
		r.Method(http.MethodGet, "/ai-sdk/chat/{thread_id}/stream", s.limitStreams(alwaysStreams, s.handle(s.handleAISDKStream)))
		r.Method(http.MethodPost, "/ag-ui", s.limitStreams(alwaysStreams, s.handle(s.handleAGUI)))
		r.Method(http.MethodPost, "/deep-chat", s.limitStreams(wantsStream, s.handle(s.handleDeepChat)))
		r.Method(http.MethodGet, "/deep-chat/history", s.handle(s.handleDeepChatHistory))
	})
	return r
}

// allowedMethods lists the methods router serves on path, for a 405's Allow
// header.
func allowedMethods(router chi.Routes, path string) []string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if router.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
			if m == http.MethodGet {
				allowed = append(allowed, http.MethodHead)
			}
		}
	}
	return allowed
}

// cors answers browsers' preflights and marks responses readable by the
// configured origins. Credentials are never allowed: chatd authenticates
// with headers, not cookies.
func (s *Server) cors() func(http.Handler) http.Handler {
	allowed := []string{"Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID", "X-Request-ID", "Accept", "Range", "If-None-Match"}
	if s.cfg.PrincipalHeader != "" {
		allowed = append(allowed, s.cfg.PrincipalHeader)
	}
	return cors.Handler(cors.Options{
		AllowedOrigins:   s.cfg.CORSOrigins,
		AllowedMethods:   []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPatch, http.MethodDelete},
		AllowedHeaders:   allowed,
		ExposedHeaders:   []string{"Location", "X-Request-ID", "Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Content-Disposition", "ETag", "Content-Range"},
		AllowCredentials: false,
		MaxAge:           600,
	})
}
