package telemetry

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// batches records the batches it is sent; an export waits for gate, when
// set, to let a test hold one in flight.
type batches struct {
	mu    sync.Mutex
	sizes []int
	names []string
	gate  chan struct{}
	shut  bool
}

func (e *batches) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.gate != nil {
		<-e.gate
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sizes = append(e.sizes, len(spans))
	for _, s := range spans {
		e.names = append(e.names, s.Name())
	}
	return nil
}

func (e *batches) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shut = true
	return nil
}

func (e *batches) got() ([]int, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.sizes...), append([]string(nil), e.names...)
}

const hour = time.Hour

func traced(t *testing.T, e *batches, o batchOptions) (trace.Tracer, *batcher) {
	t.Helper()
	b := newBatcher(e, o)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("test"), b
}

func end(tr trace.Tracer, names ...string) {
	for _, n := range names {
		_, s := tr.Start(context.Background(), n)
		s.End()
	}
}

func TestBatcherExportsAFullBatchAtOnce(t *testing.T) {
	e := &batches{}
	tr, b := traced(t, e, batchOptions{delay: hour, timeout: time.Second, maxQueue: 10, maxExport: 3})
	end(tr, "a", "b", "c", "d")
	require.Eventually(t, func() bool { s, _ := e.got(); return len(s) == 1 }, 10*time.Second, time.Millisecond)
	sizes, names := e.got()
	assert.Equal(t, []int{3}, sizes, "the fourth span waits for the next batch or the delay")
	assert.Equal(t, []string{"a", "b", "c"}, names)

	require.NoError(t, b.Shutdown(context.Background()))
	sizes, names = e.got()
	assert.Equal(t, []int{3, 1}, sizes, "shutdown exports what is queued")
	assert.Equal(t, []string{"a", "b", "c", "d"}, names)
	assert.True(t, e.shut)
	end(tr, "late")
	_, names = e.got()
	assert.Len(t, names, 4, "a span ended after shutdown is dropped")
}

func TestBatcherExportsAPartialBatchAfterTheDelay(t *testing.T) {
	e := &batches{}
	tr, _ := traced(t, e, batchOptions{delay: 10 * time.Millisecond, timeout: time.Second, maxQueue: 10, maxExport: 5})
	end(tr, "a", "b")
	require.Eventually(t, func() bool { _, n := e.got(); return len(n) == 2 }, 10*time.Second, time.Millisecond)
}

func TestBatcherForceFlushExportsEverything(t *testing.T) {
	e := &batches{}
	tr, b := traced(t, e, batchOptions{delay: hour, timeout: time.Second, maxQueue: 20, maxExport: 4})
	end(tr, "a", "b", "c", "d", "e", "f")
	require.NoError(t, b.ForceFlush(context.Background()))
	_, names := e.got()
	assert.Equal(t, []string{"a", "b", "c", "d", "e", "f"}, names, "in the order they ended, each once")
}

// While an export is held, spans beyond the queue's bound are dropped
// rather than holding up the code that ended them.
func TestBatcherDropsBeyondItsQueue(t *testing.T) {
	e := &batches{gate: make(chan struct{})}
	tr, b := traced(t, e, batchOptions{delay: hour, timeout: time.Second, maxQueue: 2, maxExport: 2})
	end(tr, "a", "b") // a full batch: taken by the export goroutine, held at the gate
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 0 }, 10*time.Second, time.Millisecond)
	end(tr, "c", "d", "e")
	close(e.gate)
	require.NoError(t, b.ForceFlush(context.Background()))
	_, names := e.got()
	assert.Equal(t, []string{"a", "b", "c", "d"}, names)
}

func TestBatchOptionsFromTheEnvironment(t *testing.T) {
	o, err := batchOptionsFrom(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, batchOptions{delay: 5 * time.Second, timeout: 30 * time.Second, maxQueue: 2048, maxExport: 512}, o)
	vars := map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "250", "OTEL_BSP_EXPORT_TIMEOUT": "1000",
		"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "400"}
	o, err = batchOptionsFrom(func(k string) string { return vars[k] })
	require.NoError(t, err)
	assert.Equal(t, batchOptions{delay: 250 * time.Millisecond, timeout: time.Second, maxQueue: 100, maxExport: 100}, o,
		"a batch is never larger than the queue")
	for _, bad := range []string{"abc", "0", "-5", "1.5"} {
		_, err := batchOptionsFrom(func(k string) string {
			if k == "OTEL_BSP_MAX_QUEUE_SIZE" {
				return bad
			}
			return ""
		})
		assert.ErrorContains(t, err, `OTEL_BSP_MAX_QUEUE_SIZE "`+bad+`"`)
	}
}
