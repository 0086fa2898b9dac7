package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the spans the API starts.
const tracerName = "chatd/internal/api"

type requestInfoKey struct{}

// requestInfo travels in a request's context so the outermost middleware can
// log what inner ones learn (the principal is known only after auth).
type requestInfo struct {
	id        string
	principal string
}

// validRequestID accepts a caller's X-Request-ID only when it is short and
// plain, so it is safe to echo and log.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func requestID(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// statusRecorder remembers the status written; Unwrap lets
// http.ResponseController reach the connection's Flush and deadlines.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError lets http.ResponseController report a failed flush (a client
// gone), which the plain Flush above cannot.
func (r *statusRecorder) FlushError() error {
	return http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observe gives every request an ID, recovers panics as 500 problems, and
// records a log line and the latency metric once the response is done.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if !validRequestID.MatchString(id) {
			id = uuid.NewString()
		}
		w.Header().Set("X-Request-ID", id)
		// Every answer is what its Content-Type says, never sniffed into
		// something a browser would run.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		info := &requestInfo{id: id}
		// The span is named when the route is known, after routing; a
		// traceparent from the caller makes it part of the caller's trace.
		ctx, span := s.startSpan(r)
		r = r.WithContext(context.WithValue(ctx, requestInfoKey{}, info))
		rec := &statusRecorder{ResponseWriter: w}

		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeError(rec, r, fmt.Errorf("panic: %v", v))
			}
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			if span.IsRecording() {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
				if status >= 500 {
					span.SetStatus(codes.Error, http.StatusText(status))
				}
				span.End()
			}
			s.metrics.httpDuration.WithLabelValues(route, methodLabel(r.Method), strconv.Itoa(status)).Observe(elapsed.Seconds())
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				slog.String("principal", info.principal))
		}()
		next.ServeHTTP(rec, r)
	})
}

// methodLabel keeps the metric's method label to a fixed set: any client can
// send any method, and every distinct label value is a new time series.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// serverKind is built once rather than per request (an allocation each).
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// startSpan starts a request's server span, continuing the trace of a
// caller's traceparent, and returns the request's context with it when it
// records (the span is named when the route is known, after routing); with
// tracing off the context is the request's own.
func (s *Server) startSpan(r *http.Request) (context.Context, trace.Span) {
	ctx := r.Context()
	if s.tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	spanCtx, span := s.tracer.Start(propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header)),
		r.Method, serverKind)
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path))
	return spanCtx, span
}
