package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/net/http/httpguts"

	"chatd/internal/processor"
	"chatd/internal/telemetry"
)

// Config is one remote processor.
type Config struct {
	// Name is the processor's name, sent in every request as "processor".
	Name        string
	Description string
	// URL is where each turn is POSTed: http or https.
	URL string
	// Secret, when set, signs every request (the Chatd-Signature header).
	Secret string
	// Headers are sent with every request to this processor alone.
	Headers map[string]string
	// Timeout bounds each request; zero leaves the turn timeout alone to
	// bound it, and a longer one is cut to the turn timeout by the turn's
	// own deadline.
	Timeout time.Duration
	// HTTPClient sends the requests; nil gives the processor a client of
	// its own that follows no redirects.
	HTTPClient *http.Client
}

// Processor is a remote processor, safe for concurrent turns.
type Processor struct {
	cfg    Config
	client *http.Client
	// header is what every request carries besides the per-turn headers.
	header http.Header
}

// New checks cfg and returns its processor.
func New(cfg Config) (*Processor, error) {
	if err := CheckURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("timeout: must not be negative")
	}
	header := http.Header{}
	for name, value := range cfg.Headers {
		if err := CheckHeader(name, value); err != nil {
			return nil, fmt.Errorf("headers: %s: %w", name, err)
		}
		header.Set(name, value)
	}
	header.Set("Content-Type", "application/json")
	header.Set("Accept", mediaNDJSON+", "+mediaJSON)
	client := cfg.HTTPClient
	if client == nil {
		client = newClient()
	}
	return &Processor{cfg: cfg, client: client, header: header}, nil
}

// newClient is a client for one remote processor: connections kept warm
// for as many concurrent turns as a busy instance runs, and no redirects,
// which would send a signed turn, and the processor's own headers, to
// wherever the first answer points.
func newClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL reports whether s can be a remote processor's URL: absolute,
// http or https, with a host.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http or https URL, such as http://127.0.0.1:8000/chat")
	}
	return nil
}

// CheckHeader reports whether a header may be configured for a remote
// processor: a valid name and value, and none of the headers chatd sets
// itself or the transport owns.
func CheckHeader(name, value string) error {
	if !httpguts.ValidHeaderFieldName(name) {
		return errors.New("not a valid header name")
	}
	if !httpguts.ValidHeaderFieldValue(value) {
		return errors.New("not a valid header value")
	}
	canonical := http.CanonicalHeaderKey(name)
	switch {
	case strings.HasPrefix(canonical, "Chatd-"), canonical == "Content-Type", canonical == "Accept":
		return errors.New("is set by chatd")
	case canonical == "Host", canonical == "Content-Length", canonical == "Transfer-Encoding", canonical == "Connection":
		return errors.New("is set by the HTTP transport")
	}
	return nil
}

// Describe implements processor.Processor.
func (p *Processor) Describe() string {
	if p.cfg.Description != "" {
		return p.cfg.Description
	}
	return "A remote processor answering over HTTP."
}

// tracerName names the spans of remote processor calls.
const tracerName = "chatd/internal/processor/remote"

// errTimeout is the cause of a request that outlived the processor's own
// timeout, told apart from the turn's deadline, whose failure the turn
// reports itself.
var errTimeout = errors.New("remote processor timeout")

// Process implements processor.Processor: one POST, whose answer is read
// as it arrives, deltas emitted line by line.
func (p *Processor) Process(ctx context.Context, in processor.Input, emit processor.Emit) (processor.Output, error) {
	body, err := p.encodeRequest(in)
	if err != nil {
		return processor.Output{}, fmt.Errorf("remote: encoding the request: %w", err)
	}
	reqCtx, cancel := ctx, context.CancelFunc(func() {})
	if p.cfg.Timeout > 0 {
		reqCtx, cancel = context.WithTimeoutCause(ctx, p.cfg.Timeout, errTimeout)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, p.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return processor.Output{}, fmt.Errorf("remote: %w", err)
	}
	p.setHeaders(req, in.TurnID, body)
	reqCtx, span := telemetry.StartChild(reqCtx, tracerName, "POST "+p.cfg.Name, trace.SpanKindClient)
	if span.IsRecording() {
		defer span.End()
		span.SetAttributes(attribute.String("chatd.processor", p.cfg.Name), attribute.String("http.request.method", http.MethodPost),
			attribute.String("server.address", req.URL.Host))
		req = req.WithContext(reqCtx)
	}
	propagation.TraceContext{}.Inject(reqCtx, propagation.HeaderCarrier(req.Header))
	resp, err := p.client.Do(req)
	if err != nil {
		return processor.Output{}, p.failure(ctx, reqCtx, &processor.Error{Detail: "the remote processor could not be reached", Err: err})
	}
	defer resp.Body.Close()
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	}
	out, err := readAnswer(resp, emit)
	if err != nil {
		span.SetStatus(codes.Error, "remote processor failed")
		return processor.Output{}, p.failure(ctx, reqCtx, err)
	}
	return out, nil
}

// setHeaders sets the request's headers: the processor's own, the turn's
// ID, and the signature when there is a secret.
func (p *Processor) setHeaders(req *http.Request, turnID string, body []byte) {
	for name, values := range p.header {
		req.Header[name] = values
	}
	req.Header.Set("Chatd-Turn-Id", turnID)
	if p.cfg.Secret != "" {
		req.Header.Set("Chatd-Signature", Sign([]byte(p.cfg.Secret), time.Now(), body))
	}
}

// failure is the error a request ends with: the turn's own end (its
// timeout, a stop) as the turn's context says, the processor's timeout,
// or err.
func (p *Processor) failure(ctx, reqCtx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("remote: %w: %w", context.Cause(ctx), err)
	}
	if errors.Is(context.Cause(reqCtx), errTimeout) {
		return &processor.Error{Detail: fmt.Sprintf("the remote processor did not answer within its timeout of %s", p.cfg.Timeout), Err: err}
	}
	return err
}
