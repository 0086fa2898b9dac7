package api

import (
	"net/http"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are chatd's Prometheus collectors, on a registry of their own so
// several servers in one process (tests) do not collide.
type Metrics struct {
	registry     *prometheus.Registry
	httpDuration *prometheus.HistogramVec
	turns        *prometheus.CounterVec
	elicitations *prometheus.CounterVec
	storeErrors  prometheus.Counter
	tokens       *prometheus.CounterVec
	// The event streams open, the bytes queued for their clients, and the
	// streams dropped for a client that fell behind or stopped reading.
	openStreams    prometheus.Gauge
	queuedBytes    prometheus.Gauge
	droppedStreams prometheus.Counter
}

// NewMetrics registers chatd's collectors plus the Go and process ones.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chatd_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern, method and status code.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method", "code"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_turns_total",
			Help: "Turns run, by processor and outcome (completed, input_required, failed).",
		}, []string{"processor", "status"}),
		elicitations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_elicitations_total",
			Help: "Elicitations by processor and event (created, accepted, declined, cancelled, expired).",
		}, []string{"processor", "event"}),
		storeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_store_errors_total",
			Help: "Requests that failed because the store was unreachable.",
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_model_tokens_total",
			Help: "Model tokens spent by turns, by processor, model and kind (input, output).",
		}, []string{"processor", "model", "kind"}),
		openStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_open_streams",
			Help: "Event streams open to clients (streamed turns and reattach streams of every protocol).",
		}),
		queuedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_stream_queued_bytes",
			Help: "Encoded events queued for the clients of open streams, not yet written.",
		}),
		droppedStreams: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_streams_dropped_total",
			Help: "Streams dropped before their end: the client went away, or did not take its events (CHATD_SSE_BUFFER_BYTES, CHATD_WRITE_TIMEOUT).",
		}),
	}
	m.registry.MustRegister(m.httpDuration, m.turns, m.elicitations, m.storeErrors, m.tokens,
		m.openStreams, m.queuedBytes, m.droppedStreams,
		// The live heap (go_gc_heap_live_bytes) beside the standard Go
		// metrics: the heap in use also counts garbage not yet collected,
		// which can be as much again, and the live heap is what to size
		// GOMEMLIMIT by.
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// TurnEnded counts a turn by processor and outcome (turn.Observer).
func (m *Metrics) TurnEnded(processor, status string) {
	m.turns.WithLabelValues(processor, status).Inc()
}

// ModelTokens counts model tokens by processor, model and kind
// (turn.UsageObserver).
func (m *Metrics) ModelTokens(processor, model, kind string, n int64) {
	m.tokens.WithLabelValues(processor, model, kind).Add(float64(n))
}

// Elicitation counts an elicitation event by processor (turn.Observer).
func (m *Metrics) Elicitation(processor, event string) {
	m.elicitations.WithLabelValues(processor, event).Inc()
}

// The streams' bookkeeping (see sseStream).
func (m *Metrics) streamOpened()    { m.openStreams.Inc() }
func (m *Metrics) streamClosed()    { m.openStreams.Dec() }
func (m *Metrics) streamDropped()   { m.droppedStreams.Inc() }
func (m *Metrics) queued(delta int) { m.queuedBytes.Add(float64(delta)) }
