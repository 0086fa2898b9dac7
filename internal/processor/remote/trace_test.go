package remote_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"chatd/internal/blocks"
	"chatd/internal/processor"
	"chatd/internal/processor/remote"
)

// A traced turn's request to a remote processor has a span of its own and
// carries it as traceparent.
func TestRequestCarriesTheTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	fake := newFakeRemote(t, "", func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		answerJSON(t, w, `{"text":"hi"}`)
	})
	ctx, turnSpan := tp.Tracer("test").Start(context.Background(), "chatd.turn")
	msg := blocks.NewMessage(blocks.RoleUser, "hi", nil, nil)
	_, err := mustRemote(t, remote.Config{Name: "php", URL: fake.URL}).Process(ctx,
		processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Principal: "bob", Message: &msg}, discard)
	require.NoError(t, err)
	turnSpan.End()

	spans := rec.Ended()
	require.Len(t, spans, 2)
	call := spans[0]
	assert.Equal(t, "POST php", call.Name())
	assert.Equal(t, turnSpan.SpanContext().SpanID(), call.Parent().SpanID())
	assert.Contains(t, call.Attributes(), attribute.Int("http.response.status_code", 200))
	got := fake.received()
	require.Len(t, got, 1)
	assert.Equal(t, "00-"+call.SpanContext().TraceID().String()+"-"+call.SpanContext().SpanID().String()+"-01",
		got[0].header.Get("Traceparent"))
}
