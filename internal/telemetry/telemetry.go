// Package telemetry builds chatd's OpenTelemetry tracer provider from the
// standard OTEL_* environment variables, and the log handler that stamps log
// lines with the trace they were written in.
//
// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only
// form) or OTEL_TRACES_EXPORTER is set: then there is no provider, and no
// span is started at all. Spans below a request's are started from the
// request's span (StartChild), so only the API is handed the provider.
package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name spans carry when OTEL_SERVICE_NAME does
// not name one.
const ServiceName = "chatd"

// Provider is the tracer provider and what ends it.
type Provider struct {
	// TracerProvider is nil when tracing is off.
	TracerProvider trace.TracerProvider
	// Shutdown flushes the spans not yet exported and stops the exporter;
	// with tracing off it does nothing.
	Shutdown func(context.Context) error
}

// NewProvider returns the tracer provider getenv describes. The exporter,
// its endpoint (with /v1/traces appended to a base endpoint for
// http/protobuf), headers, sampler (OTEL_TRACES_SAMPLER, parent-based
// always_on by default) and resource are read by the SDK from the same
// variables; getenv decides only whether tracing is on and which protocol
// the exporter speaks.
func NewProvider(ctx context.Context, getenv func(string) string) (Provider, error) {
	off := Provider{Shutdown: func(context.Context) error { return nil }}
	kind := getenv("OTEL_TRACES_EXPORTER")
	endpoint := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") + getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	switch {
	case kind == "none", kind == "" && endpoint == "":
		return off, nil
	case kind != "" && kind != "otlp":
		return Provider{}, fmt.Errorf("OTEL_TRACES_EXPORTER %q: chatd exports otlp or none", kind)
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exporter sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return Provider{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: want http/protobuf or grpc", protocol)
	}
	if err != nil {
		return Provider{}, fmt.Errorf("otlp exporter: %w", err)
	}
	batch, err := batchOptionsFrom(getenv)
	if err != nil {
		return Provider{}, err
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(ServiceName)), resource.Environment())
	if err != nil {
		return Provider{}, fmt.Errorf("otel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newBatcher(exporter, batch)), sdktrace.WithResource(res))
	return Provider{TracerProvider: tp, Shutdown: tp.Shutdown}, nil
}

// StartChild starts a span of kind named name under ctx's span when that
// span records, and otherwise returns ctx and its span unchanged: work
// outside a traced request, and all work with tracing off, then costs no
// span and no allocation. Callers set attributes only on a span that
// records (span.IsRecording), for the same reason.
func StartChild(ctx context.Context, tracer, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(tracer).Start(ctx, name, kindOption(kind))
}

// kindOptions holds one start option per span kind, built once: a
// trace.WithSpanKind made per span is an allocation per span.
var kindOptions = [...]trace.SpanStartOption{
	trace.SpanKindUnspecified: trace.WithSpanKind(trace.SpanKindUnspecified),
	trace.SpanKindInternal:    trace.WithSpanKind(trace.SpanKindInternal),
	trace.SpanKindServer:      trace.WithSpanKind(trace.SpanKindServer),
	trace.SpanKindClient:      trace.WithSpanKind(trace.SpanKindClient),
	trace.SpanKindProducer:    trace.WithSpanKind(trace.SpanKindProducer),
	trace.SpanKindConsumer:    trace.WithSpanKind(trace.SpanKindConsumer),
}

func kindOption(kind trace.SpanKind) trace.SpanStartOption {
	if int(kind) < len(kindOptions) {
		return kindOptions[kind]
	}
	return trace.WithSpanKind(kind)
}
