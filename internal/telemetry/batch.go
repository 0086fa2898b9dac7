package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is a batch span processor read from the standard OTEL_BSP_*
// variables, as the SDK's is, that wakes its export goroutine only when a
// batch is full or the schedule delay has passed. The SDK's hands every
// ended span to that goroutine over a channel, waking it once a span: four
// wake-ups a traced turn, about 2 % of its throughput in BenchmarkTracing
// (internal/api) on two cores.
type batcher struct {
	exporter sdktrace.SpanExporter
	opts     batchOptions

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	stopped bool

	exportMu sync.Mutex    // one export at a time, in the order spans ended
	full     chan struct{} // a batch is waiting; capacity 1
	stop     chan struct{}
	done     chan struct{}
}

type batchOptions struct {
	delay, timeout      time.Duration
	maxQueue, maxExport int
}

// batchOptionsFrom reads OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT
// (milliseconds), OTEL_BSP_MAX_QUEUE_SIZE and OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
// with the specification's defaults; a batch is never larger than the
// queue.
func batchOptionsFrom(getenv func(string) string) (batchOptions, error) {
	o := batchOptions{delay: 5 * time.Second, timeout: 30 * time.Second, maxQueue: 2048, maxExport: 512}
	for _, v := range []struct {
		name string
		ms   *time.Duration
		n    *int
	}{
		{"OTEL_BSP_SCHEDULE_DELAY", &o.delay, nil},
		{"OTEL_BSP_EXPORT_TIMEOUT", &o.timeout, nil},
		{"OTEL_BSP_MAX_QUEUE_SIZE", nil, &o.maxQueue},
		{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", nil, &o.maxExport},
	} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return batchOptions{}, fmt.Errorf("%s %q: want a positive integer", v.name, s)
		}
		if v.ms != nil {
			*v.ms = time.Duration(n) * time.Millisecond
		} else {
			*v.n = n
		}
	}
	o.maxExport = min(o.maxExport, o.maxQueue)
	return o, nil
}

func newBatcher(exporter sdktrace.SpanExporter, opts batchOptions) *batcher {
	b := &batcher{exporter: exporter, opts: opts, full: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span, dropping it when the queue is full (as the
// SDK's processor does: tracing never holds a request up).
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.stopped || len(b.queue) >= b.opts.maxQueue {
		b.mu.Unlock()
		return
	}
	b.queue = append(b.queue, s)
	n := len(b.queue)
	b.mu.Unlock()
	if n == b.opts.maxExport {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) run() {
	defer close(b.done)
	timer := time.NewTimer(b.opts.delay)
	defer timer.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-b.full:
			b.export(context.Background(), false)
		case <-timer.C:
			b.export(context.Background(), true)
		}
		timer.Reset(b.opts.delay)
	}
}

// export sends the queue in batches: the full batches only, or all of it.
func (b *batcher) export(ctx context.Context, all bool) error {
	b.exportMu.Lock()
	defer b.exportMu.Unlock()
	var first error
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.opts.maxExport)
		if n == 0 || (!all && n < b.opts.maxExport) {
			b.mu.Unlock()
			return first
		}
		batch := make([]sdktrace.ReadOnlySpan, n)
		copy(batch, b.queue)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:]) // let the exported spans be collected
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		ectx, cancel := context.WithTimeout(ctx, b.opts.timeout)
		if err := b.exporter.ExportSpans(ectx, batch); err != nil && first == nil {
			first = err
		}
		cancel()
	}
}

// ForceFlush exports every span ended so far.
func (b *batcher) ForceFlush(ctx context.Context) error {
	return b.export(ctx, true)
}

// Shutdown stops the export goroutine, exports what is queued and shuts
// the exporter down; spans ended afterwards are dropped.
func (b *batcher) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	already := b.stopped
	b.stopped = true
	b.mu.Unlock()
	if already {
		return nil
	}
	close(b.stop)
	<-b.done
	err := b.export(ctx, true)
	if serr := b.exporter.Shutdown(ctx); err == nil {
		err = serr
	}
	return err
}
