package store

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"chatd/internal/telemetry"
)

// tracerName names the spans of the store's round trips.
const tracerName = "chatd/internal/store"

// traceHook gives each round trip to Redis — a command or a pipeline — a
// client span, when the caller's span records: a round trip made outside a
// traced request (a lease renewal's background work) starts no trace of its
// own. It is installed only when tracing is on (Options.Trace).
type traceHook struct{}

var dbSystem = attribute.String("db.system.name", "redis")

func (traceHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (traceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !trace.SpanFromContext(ctx).IsRecording() {
			return next(ctx, cmd)
		}
		op := cmd.Name()
		ctx, span := telemetry.StartChild(ctx, tracerName, op, trace.SpanKindClient)
		span.SetAttributes(dbSystem, attribute.String("db.operation.name", op))
		defer span.End()
		err := next(ctx, cmd)
		endRoundTrip(span, err)
		return err
	}
}

func (traceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !trace.SpanFromContext(ctx).IsRecording() {
			return next(ctx, cmds)
		}
		op := "PIPELINE"
		if len(cmds) > 0 {
			op += " " + cmds[0].Name()
		}
		ctx, span := telemetry.StartChild(ctx, tracerName, op, trace.SpanKindClient)
		span.SetAttributes(dbSystem, attribute.String("db.operation.name", op), attribute.Int("db.operation.batch.size", len(cmds)))
		defer span.End()
		err := next(ctx, cmds)
		endRoundTrip(span, err)
		return err
	}
}

// endRoundTrip marks a failed round trip; redis.Nil is an answer, not a
// failure.
func endRoundTrip(span trace.Span, err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		span.RecordError(err)
		span.SetStatus(codes.Error, "redis: "+strconv.Quote(err.Error()))
	}
}
