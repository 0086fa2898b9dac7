package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/processor/demo"
	"chatd/internal/processor/echo"
	"chatd/internal/render"
	"chatd/internal/store"
	"chatd/internal/turn"
	"chatd/internal/ui"
)

// testEntityURL is where entity cards link in these tests.
const testEntityURL = "https://site.example/{type}/{id}"

// hangGuard bounds a whole browser test so that a page that never reaches a
// state fails the test instead of hanging it; no step is expected to come
// anywhere near it.
const hangGuard = 3 * time.Minute

// gated streams its first words, then waits for the test to open the gate
// before it finishes: a reply that is certainly still streaming.
type gated struct{ open chan struct{} }

func (gated) Describe() string { return "Streams half a reply, then waits for the test." }

func (g gated) Process(ctx context.Context, _ processor.Input, emit processor.Emit) (processor.Output, error) {
	emit(processor.Delta{Text: "First half,"})
	select {
	case <-g.open:
	case <-ctx.Done():
		return processor.Output{}, ctx.Err()
	}
	emit(processor.Delta{Text: " second half."})
	return processor.Output{Text: "First half, second half."}, nil
}

// chatdOption changes a test chatd.
type chatdOption func(*api.Deps, *turn.Config, map[string]processor.Processor)

// withGate adds the gated processor, released by closing gate.
func withGate(gate chan struct{}) chatdOption {
	return func(_ *api.Deps, _ *turn.Config, procs map[string]processor.Processor) {
		procs["gated"] = gated{open: gate}
	}
}

// withElicitationTTL makes questions expire after d.
func withElicitationTTL(d time.Duration) chatdOption {
	return func(_ *api.Deps, turns *turn.Config, _ map[string]processor.Processor) { turns.ElicitationTTL = d }
}

// newTestChatd serves the API and the page, with the demo processor pausing
// delay between streamed chunks, and echo.
func newTestChatd(tb testing.TB, auth api.Authenticator, delay time.Duration, opts ...chatdOption) *httptest.Server {
	tb.Helper()
	st := store.NewMemory(store.Options{ThreadTTL: time.Hour, HistoryMax: 1000, IdempotencyTTL: time.Hour})
	tb.Cleanup(func() { _ = st.Close() })
	procs := map[string]processor.Processor{
		"demo": demo.NewWithDelay(delay),
		"echo": echo.New(),
	}
	deps := api.Deps{Store: st, Auth: auth, Metrics: api.NewMetrics()}
	deps.UI, deps.Renderer = mustPageAndRenderer(tb, testEntityURL)
	turns := turn.DefaultConfig
	for _, opt := range opts {
		opt(&deps, &turns, procs)
	}
	reg, err := processor.NewRegistry(procs, "demo")
	require.NoError(tb, err)
	deps.Engine = turn.New(turn.Deps{Store: st, Processors: reg, Observer: deps.Metrics, Config: turns})
	deps.Processors = reg
	srv := httptest.NewServer(api.NewServer(deps))
	tb.Cleanup(srv.Close)
	return srv
}

// mustPageAndRenderer returns the page and the server renderer, both
// linking entities through entityURL.
func mustPageAndRenderer(tb testing.TB, entityURL string) (*ui.Page, *render.Renderer) {
	tb.Helper()
	page, err := ui.New(ui.Options{EntityURLTemplate: entityURL})
	require.NoError(tb, err)
	renderer, err := render.New(render.Options{EntityURLTemplate: entityURL})
	require.NoError(tb, err)
	return page, renderer
}

// chromiumPath finds Debian's chromium, which scripts/ensure-chromium.sh
// installs for make test.
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("chromium is missing: make test installs it with scripts/ensure-chromium.sh")
	}
	tb.Skip("chromium is missing: run scripts/ensure-chromium.sh (make test does)")
	return ""
}

// tab is one browser tab on the page, with what it logged.
type tab struct {
	ctx context.Context
	url string

	mu      sync.Mutex
	errors  []string // console errors, exceptions, browser log errors
	dialogs []string // alert, confirm and prompt dialogs the page opened
}

// newTab starts a fresh headless Chromium (its own profile) for the page of
// srv; open loads the page.
func newTab(tb testing.TB, srv *httptest.Server) *tab {
	tb.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(tb)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1280, 860),
	}
	guard, cancelGuard := context.WithTimeout(context.Background(), hangGuard)
	tb.Cleanup(cancelGuard)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(guard, opts...)
	tb.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	tb.Cleanup(cancel)

	t := &tab{ctx: ctx, url: srv.URL + "/"}
	// The first Run starts the browser; the subscriptions need its target.
	_, err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 860))
	require.NoError(tb, err)
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// A 4xx the page handles is logged by the browser's network
			// layer; it is not an error of the page.
			if m.Source == "network" {
				continue
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				t.mu.Lock()
				t.errors = append(t.errors, fmt.Sprintf("%s (%s:%d)", m.Text, m.URL, m.Line))
				t.mu.Unlock()
			}
		}
	}()
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			t.mu.Lock()
			t.dialogs = append(t.dialogs, string(ev.Type)+": "+ev.Message)
			t.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return t
}

// open loads the page and waits until it has started.
func (t *tab) open(tb testing.TB) {
	tb.Helper()
	t.do(tb, chromedp.Navigate(t.url), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
}

func (t *tab) do(tb testing.TB, steps ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	require.NoError(tb, chromedp.Do(t.ctx, steps...))
}

// waitJS waits until the JavaScript expression is truthy.
func (t *tab) waitJS(tb testing.TB, what, expr string) {
	tb.Helper()
	_, err := chromedp.Run(t.ctx, chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)))
	require.NoError(tb, err, "waiting for %s", what)
}

// eval returns the value of a JavaScript expression.
func eval[T any](tb testing.TB, t *tab, expr string) T {
	tb.Helper()
	v, err := chromedp.Run(t.ctx, chromedp.Evaluate[T](expr))
	require.NoError(tb, err, expr)
	return v
}

// send types text into the composer and sends it.
func (t *tab) send(tb testing.TB, text string) {
	tb.Helper()
	t.waitJS(tb, "the composer to be free", `!document.getElementById('send').disabled && !document.getElementById('input').disabled`)
	t.do(tb, chromedp.SetValue(chromedp.CSS("#input"), text), chromedp.Click(chromedp.CSS("#send")))
}

// waitReply waits for an assistant message whose text contains s, with no
// reply still streaming.
func (t *tab) waitReply(tb testing.TB, s string) {
	tb.Helper()
	t.waitJS(tb, "a reply containing "+s, fmt.Sprintf(`!document.querySelector('.streaming') &&
		[...document.querySelectorAll('.msg-assistant .msg-text')].some((n) => n.textContent.includes(%q))`, s))
}

// lastAssistant returns the CSS selector of the newest assistant message.
const lastAssistant = `#messages > li.msg-assistant:last-of-type`

func (t *tab) checkQuiet(tb testing.TB) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	assert.Empty(tb, t.errors, "console errors")
	assert.Empty(tb, t.dialogs, "dialogs opened")
}

// screenshot saves the page to docs/ when CHATD_SCREENSHOTS is set, so an
// ordinary test run leaves the tree as it was.
func (t *tab) screenshot(tb testing.TB, name string) {
	tb.Helper()
	if os.Getenv("CHATD_SCREENSHOTS") == "" {
		return
	}
	png, err := chromedp.Run(t.ctx, chromedp.CaptureScreenshot())
	require.NoError(tb, err)
	require.NoError(tb, os.WriteFile(filepath.Join("..", "..", "docs", name), png, 0o644))
}

// TestDemoConversation drives a whole demo conversation through the page:
// a card, sources, a form answered wrong then right, a multi-select, a
// declined confirm, a reload mid-stream, with nothing logged to the console.
func TestDemoConversation(t *testing.T) {
	srv := newTestChatd(t, nil, 5*time.Millisecond)
	tab := newTab(t, srv)
	tab.open(t)

	// A thread is created by the first message, with the chosen processor.
	assert.Equal(t, "demo", eval[string](t, tab, `document.getElementById('processor').value`))
	tab.send(t, "Show me a card")
	tab.waitReply(t, "entity card")
	assert.Equal(t, "Show me a card", eval[string](t, tab, `document.getElementById('thread-title').textContent`))
	assert.Equal(t, "https://site.example/node/42", eval[string](t, tab, `document.querySelector('.entity-card h3 a').href`))
	assert.Contains(t, eval[string](t, tab, `document.querySelector('.entity-card').textContent`), "Getting started with chatd")
	assert.Contains(t, eval[string](t, tab, `document.querySelector('.entity-card').textContent`), "view mode: teaser")

	// Sources: numbered, linked, with their snippets; suggested replies as buttons.
	tab.send(t, "sources")
	tab.waitReply(t, "Sources:")
	assert.Equal(t, 3, eval[int](t, tab, `document.querySelectorAll('`+lastAssistant+` .sources li').length`))
	assert.Equal(t, "https://www.drupal.org/project/ai", eval[string](t, tab, `document.querySelector('`+lastAssistant+` .sources li:nth-child(3) a').href`))
	assert.Contains(t, eval[string](t, tab, `document.querySelector('`+lastAssistant+` .status-item').textContent`), "Found 3 sources")
	suggestions := eval[[]string](t, tab, `[...document.querySelectorAll('`+lastAssistant+` .suggestion')].map((b) => b.textContent)`)
	assert.Contains(t, suggestions, "Book an event")
	assert.Equal(t, 1, eval[int](t, tab, `[...document.querySelectorAll('.suggestions')].filter((s) => !s.hidden).length`),
		"only the newest reply offers suggestions")

	// The booking form, from a suggested reply: every field kind, answered
	// wrong (errors shown at their fields), then right.
	t.Run("form", func(t *testing.T) {
		tab.do(t, chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('.suggestion')].find((b) => b.textContent === 'Book an event').click()`))
		tab.waitJS(t, "the booking form", `document.querySelector('#pending form.elicitation')`)
		form := `#pending form.elicitation`
		labels := eval[[]string](t, tab, `[...document.querySelectorAll('`+form+` label, `+form+` legend')].map((l) => l.textContent)`)
		for _, want := range []string{"Title *", "Date *", "Attendees *", "Notify attendees", "Room *", "Confirmation email", "Aurora (ground floor, 12 seats)"} {
			assert.Contains(t, labels, want)
		}
		assert.Equal(t, "date", eval[string](t, tab, `document.querySelector('`+form+` [data-field="date"] input').type`))
		assert.Equal(t, "email", eval[string](t, tab, `document.querySelector('`+form+` [data-field="email"] input').type`))
		assert.Equal(t, "1", eval[string](t, tab, `document.querySelector('`+form+` [data-field="attendees"] input').min`))
		assert.Equal(t, 3, eval[int](t, tab, `document.querySelectorAll('`+form+` [data-field="room"] input[type="radio"]').length`), "radios widget hint")
		assert.True(t, eval[bool](t, tab, `document.querySelector('`+form+` [data-field="notify"] input').checked`), "default true")
		assert.Contains(t, eval[string](t, tab, `document.querySelector('#form-expiry').textContent`), "Expires at")
		assert.True(t, eval[bool](t, tab, `document.getElementById('input').disabled`), "the composer waits for the answer")
		assertLabelled(t, tab)

		// Wrong: no title, no room, 0 attendees, a bad email.
		tab.do(t,
			chromedp.SetValue(chromedp.CSS(form+` [data-field="date"] input`), "2026-12-03"),
			chromedp.SetValue(chromedp.CSS(form+` [data-field="attendees"] input`), "0"),
			chromedp.SetValue(chromedp.CSS(form+` [data-field="email"] input`), "not-an-email"),
			chromedp.Click(chromedp.CSS(form+` button[type="submit"]`)),
		)
		tab.waitJS(t, "field errors", `document.querySelectorAll('`+form+` .field.invalid').length >= 4`)
		invalid := eval[[]string](t, tab, `[...document.querySelectorAll('`+form+` .field.invalid')].map((f) => f.dataset.field)`)
		assert.ElementsMatch(t, []string{"title", "attendees", "room", "email"}, invalid)
		assert.Equal(t, "true", eval[string](t, tab, `document.querySelector('`+form+` [data-field="title"] input').getAttribute('aria-invalid')`))
		assert.NotEmpty(t, eval[string](t, tab, `document.querySelector('`+form+` [data-field="attendees"] .field-error').textContent`))

		// Right.
		tab.do(t,
			chromedp.SetValue(chromedp.CSS(form+` [data-field="title"] input`), "Team sync"),
			chromedp.SetValue(chromedp.CSS(form+` [data-field="attendees"] input`), "6"),
			chromedp.SetValue(chromedp.CSS(form+` [data-field="email"] input`), "ana@example.com"),
			chromedp.Click(chromedp.CSS(form+` [data-field="room"] input[value="Aurora"]`)),
			chromedp.Click(chromedp.CSS(form+` button[type="submit"]`)),
		)
		tab.waitReply(t, `Booked "Team sync" on 2026-12-03 in Aurora for 6 people`)
		assert.Equal(t, 0, eval[int](t, tab, `document.querySelectorAll('#pending form').length`))
		answer := eval[string](t, tab, `document.querySelector('#messages .msg-answer .msg-text').textContent`)
		assert.Contains(t, answer, "Team sync")
		assert.Contains(t, eval[string](t, tab, `document.querySelector('`+lastAssistant+` .entity-card').textContent`), "Team sync")
		tab.screenshot(t, "chat-page.png")
	})

	// A multi-select: pick two topics.
	t.Run("multi-select", func(t *testing.T) {
		tab.send(t, "tags")
		tab.waitJS(t, "the topics form", `document.querySelector('#pending [data-field="topics"]')`)
		assert.Equal(t, 5, eval[int](t, tab, `document.querySelectorAll('#pending [data-field="topics"] input[type="checkbox"]').length`))
		assert.Contains(t, eval[string](t, tab, `document.querySelector('#pending [data-field="topics"]').textContent`), "Pick at least 1 and at most 3.")
		tab.do(t,
			chromedp.Click(chromedp.CSS(`#pending input[value="citations"]`)),
			chromedp.Click(chromedp.CSS(`#pending input[value="streaming"]`)),
			chromedp.Click(chromedp.CSS(`#pending button[type="submit"]`)),
		)
		tab.waitReply(t, "You picked: Citations, Streaming.")
	})

	// A confirm for an empty schema, declined.
	t.Run("declined confirm", func(t *testing.T) {
		tab.send(t, "delete")
		tab.waitJS(t, "the confirm dialog", `document.getElementById('confirm-dialog').open`)
		assert.Equal(t, "Delete 10 items?", eval[string](t, tab, `document.getElementById('confirm-message').textContent`))
		assert.Contains(t, eval[string](t, tab, `document.getElementById('confirm-expiry').textContent`), "Expires at")
		tab.do(t, chromedp.Click(chromedp.CSS(`#confirm-no`)))
		tab.waitReply(t, "Nothing was deleted.")
		assert.False(t, eval[bool](t, tab, `document.getElementById('confirm-dialog').open`))
	})

	// Reopening: a reload shows the same thread with the whole exchange.
	t.Run("reload", func(t *testing.T) {
		before := eval[int](t, tab, `document.querySelectorAll('#messages > li').length`)
		threadID := eval[string](t, tab, `localStorage.getItem('chatd.thread')`)
		tab.open(t)
		tab.waitReply(t, "Nothing was deleted.")
		assert.Equal(t, before, eval[int](t, tab, `document.querySelectorAll('#messages > li').length`))
		assert.Equal(t, threadID, eval[string](t, tab, `localStorage.getItem('chatd.thread')`))
	})

	tab.checkQuiet(t)
}

// TestReloadMidStream reloads the page while a reply streams: the page
// reattaches to the running turn, shows what was streamed so far and the
// rest as it comes, and ends with the whole reply once.
func TestReloadMidStream(t *testing.T) {
	gate := make(chan struct{})
	srv := newTestChatd(t, nil, 0, withGate(gate))
	requireReattach(t, srv)
	tab := newTab(t, srv)
	tab.open(t)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#processor"), "gated"))
	tab.send(t, "Tell me in two halves")
	tab.waitJS(t, "the reply to start streaming", `(document.querySelector('.streaming .msg-text')?.textContent || '') === 'First half,'`)

	tab.open(t)
	tab.waitJS(t, "the reattached stream", `(document.querySelector('.streaming .msg-text')?.textContent || '') === 'First half,'`)
	assert.True(t, eval[bool](t, tab, `document.getElementById('send').disabled`), "no new turn while one runs")
	close(gate)
	tab.waitReply(t, "First half, second half.")
	assert.Equal(t, "Tell me in two halves", eval[string](t, tab, `document.querySelector('#messages .msg-user .msg-text').textContent`))
	assert.Equal(t, 2, eval[int](t, tab, `document.querySelectorAll('#messages > li').length`))

	// History agrees with what the page showed.
	tab.open(t)
	tab.waitReply(t, "First half, second half.")
	assert.Equal(t, 2, eval[int](t, tab, `document.querySelectorAll('#messages > li').length`))
	tab.checkQuiet(t)
}

// TestStopButton stops a streaming reply from the page: the Stop button
// shows while the reply streams, and the reply stays, marked stopped, with
// the text written so far, after a reload too.
func TestStopButton(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	srv := newTestChatd(t, nil, 0, withGate(gate))
	tab := newTab(t, srv)
	tab.open(t)
	assert.True(t, eval[bool](t, tab, `document.getElementById('stop').hidden`), "no Stop button while nothing streams")
	tab.do(t, chromedp.SetValue(chromedp.CSS("#processor"), "gated"))
	tab.send(t, "Tell me in two halves")
	tab.waitJS(t, "the reply to start streaming", `(document.querySelector('.streaming .msg-text')?.textContent || '') === 'First half,'`)
	tab.waitJS(t, "the Stop button", `!document.getElementById('stop').hidden`)
	tab.do(t, chromedp.Click(chromedp.CSS("#stop")))
	stopped := lastAssistant + `.msg-stopped`
	tab.waitJS(t, "the stopped reply", fmt.Sprintf(`!document.querySelector('.streaming') && document.querySelector(%q)`, stopped))
	assert.Equal(t, "First half,", eval[string](t, tab, fmt.Sprintf(`document.querySelector(%q).textContent`, stopped+" .msg-text")))
	assert.Equal(t, "Stopped", eval[string](t, tab, fmt.Sprintf(`document.querySelector(%q).textContent`, stopped+" .stopped-badge")))
	assert.True(t, eval[bool](t, tab, `document.getElementById('stop').hidden`), "the Stop button goes with the stream")
	assert.False(t, eval[bool](t, tab, `document.getElementById('send').disabled`), "the composer is free again")

	tab.open(t)
	tab.waitJS(t, "the stopped reply from history", fmt.Sprintf(`document.querySelector(%q)`, stopped))
	tab.checkQuiet(t)
}

// cuttingProxy forwards to chatd but ends the first POST stream and the
// first reattach stream that carry cutAfter right after that event, as a
// dropped connection would; it records the Last-Event-ID of every reattach
// request.
type cuttingProxy struct {
	backend  *httptest.Server
	cutAfter string

	mu          sync.Mutex
	cut         map[string]bool
	lastEventID []string
}

func (p *cuttingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := ""
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/turns"):
		kind = "post"
	case strings.HasSuffix(r.URL.Path, "/events"):
		kind = "events"
		p.mu.Lock()
		p.lastEventID = append(p.lastEventID, r.Header.Get("Last-Event-ID"))
		p.mu.Unlock()
	}
	p.mu.Lock()
	cut := kind != "" && !p.cut[kind]
	if cut {
		p.cut[kind] = true
	}
	p.mu.Unlock()

	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "http", strings.TrimPrefix(p.backend.URL, "http://")
	resp, err := p.backend.Client().Transport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	flusher := w.(http.Flusher)
	buf := make([]byte, 4096)
	var seen []byte
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			seen = append(seen, buf[:n]...)
			if at := bytes.Index(seen, []byte(p.cutAfter)); cut && at >= 0 {
				if end := bytes.Index(seen[at:], []byte("\n\n")); end >= 0 {
					// Forward up to the end of that event, then drop the rest.
					_, _ = w.Write(seen[len(seen)-n : at+end+2])
					flusher.Flush()
					return
				}
			}
			_, _ = w.Write(buf[:n])
			flusher.Flush()
		}
		if err != nil {
			return
		}
	}
}

// TestStreamResumesWithLastEventID drops the turn's stream mid-reply: the
// page reattaches after the last event it saw (Last-Event-ID) and shows the
// reply once, whole.
func TestStreamResumesWithLastEventID(t *testing.T) {
	gate := make(chan struct{})
	backend := newTestChatd(t, nil, 0, withGate(gate))
	requireReattach(t, backend)
	proxy := &cuttingProxy{backend: backend, cutAfter: "First half,", cut: map[string]bool{}}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	tab := newTab(t, front)
	tab.open(t)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#processor"), "gated"))
	tab.send(t, "Tell me in two halves")
	// The POST stream is cut after the first delta; the page reattaches
	// after it.
	proxy.waitFor(t, 1)
	close(gate)
	tab.waitReply(t, "First half, second half.")
	assert.Equal(t, "First half, second half.", eval[string](t, tab, `document.querySelector('`+lastAssistant+` .msg-text').textContent`))
	proxy.mu.Lock()
	assert.Equal(t, "2", proxy.lastEventID[0], "reattached after message.start (1) and the first delta (2)")
	proxy.mu.Unlock()
	tab.checkQuiet(t)
}

// waitFor waits until n reattach requests have come through.
func (p *cuttingProxy) waitFor(tb testing.TB, n int) {
	tb.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		got := len(p.lastEventID)
		p.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("fewer than %d reattach requests", n)
}

// everyKind is an elicitation with every field kind chatd allows, widget
// hints among them (one the page knows, one it does not).
const everyKind = `{"message": "Tell me everything", "requestedSchema": {"type": "object", "properties": {
	"name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 20, "default": "Ana"},
	"site": {"type": "string", "title": "Website", "format": "uri"},
	"meet": {"type": "string", "title": "Meeting time", "format": "date-time"},
	"day": {"type": "string", "title": "Day", "format": "date"},
	"mail": {"type": "string", "title": "Email", "format": "email"},
	"ratio": {"type": "number", "title": "Ratio", "minimum": 0, "maximum": 1},
	"count": {"type": "integer", "title": "Count", "minimum": 1, "maximum": 9, "default": 3},
	"ok": {"type": "boolean", "title": "OK", "default": false},
	"color": {"type": "string", "title": "Color", "enum": ["red", "green"], "enumNames": ["Red", "Green"]},
	"size": {"type": "string", "title": "Size", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}], "default": "l"},
	"tags": {"type": "array", "title": "Tags", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
	"node": {"type": "string", "title": "Article"}},
	"required": ["name", "count"]},
	"_meta": {"drupal.org/ai.widgets": {"node": {"widget": "entity_autocomplete", "target_type": "node"}, "name": {"widget": "no_such_widget"}}}}`

// TestEveryFieldKind answers a form with every field kind through the page;
// echo replies with exactly the answer it received.
func TestEveryFieldKind(t *testing.T) {
	srv := newTestChatd(t, nil, 0)
	tab := newTab(t, srv)
	tab.open(t)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#processor"), "echo"))
	tab.send(t, "/elicit "+strings.Join(strings.Fields(everyKind), " "))
	form := `#pending form.elicitation`
	tab.waitJS(t, "the form", `document.querySelector('`+form+`')`)
	assertLabelled(t, tab)

	types := eval[map[string]string](t, tab, `Object.fromEntries([...document.querySelectorAll('`+form+` .field')].map((f) => {
		const c = f.querySelector('input, select, textarea');
		return [f.dataset.field, c.tagName.toLowerCase() + ':' + (c.type || '')];
	}))`)
	assert.Equal(t, map[string]string{
		"name": "input:text", "site": "input:url", "meet": "input:datetime-local", "day": "input:date",
		"mail": "input:email", "ratio": "input:number", "count": "input:number", "ok": "input:checkbox",
		"color": "select:select-one", "size": "select:select-one", "tags": "input:checkbox", "node": "input:text",
	}, types)
	assert.Equal(t, "Ana", eval[string](t, tab, `document.querySelector('`+form+` [data-field="name"] input').value`), "string default")
	assert.Equal(t, "l", eval[string](t, tab, `document.querySelector('`+form+` [data-field="size"] select').value`), "select default")
	assert.Equal(t, []string{"(none)", "Red", "Green"}, eval[[]string](t, tab, `[...document.querySelectorAll('`+form+` [data-field="color"] option')].map((o) => o.textContent)`))
	assert.Equal(t, "any", eval[string](t, tab, `document.querySelector('`+form+` [data-field="ratio"] input').step`))
	assert.Equal(t, "1", eval[string](t, tab, `document.querySelector('`+form+` [data-field="count"] input').step`))
	assert.Equal(t, "Search node…", eval[string](t, tab, `document.querySelector('`+form+` [data-field="node"] input').placeholder`))

	tab.do(t,
		chromedp.SetValue(chromedp.CSS(form+` [data-field="site"] input`), "https://example.com/x"),
		chromedp.SetValue(chromedp.CSS(form+` [data-field="meet"] input`), "2026-12-03T10:30"),
		chromedp.SetValue(chromedp.CSS(form+` [data-field="day"] input`), "2026-12-04"),
		chromedp.SetValue(chromedp.CSS(form+` [data-field="mail"] input`), "a@example.com"),
		chromedp.SetValue(chromedp.CSS(form+` [data-field="ratio"] input`), "0.5"),
		chromedp.Click(chromedp.CSS(form+` [data-field="ok"] input`)),
		chromedp.SetValue(chromedp.CSS(form+` [data-field="color"] select`), "green"),
		chromedp.Click(chromedp.CSS(form+` [data-field="tags"] input[value="a"]`)),
		chromedp.Click(chromedp.CSS(form+` [data-field="tags"] input[value="c"]`)),
		chromedp.SetValue(chromedp.CSS(form+` [data-field="node"] input`), "42"),
	)
	meetUTC := eval[string](t, tab, `new Date('2026-12-03T10:30').toISOString()`)
	tab.do(t, chromedp.Click(chromedp.CSS(form+` button[type="submit"]`)))
	tab.waitReply(t, `{"action":"accept"`)
	reply := eval[string](t, tab, `document.querySelector('`+lastAssistant+` .msg-text').textContent`)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(reply), &got))
	assert.Equal(t, map[string]any{"action": "accept", "content": map[string]any{
		"name": "Ana", "site": "https://example.com/x", "meet": meetUTC, "day": "2026-12-04", "mail": "a@example.com",
		"ratio": 0.5, "count": 3.0, "ok": true, "color": "green", "size": "l", "tags": []any{"a", "c"}, "node": "42",
	}}, got)
	tab.checkQuiet(t)
}

// TestExpiry shows a question's expiry and, once it has passed, lets the
// user go on without answering.
func TestExpiry(t *testing.T) {
	srv := newTestChatd(t, nil, 0, withElicitationTTL(2*time.Second))
	tab := newTab(t, srv)
	tab.open(t)
	tab.send(t, "delete")
	tab.waitJS(t, "the confirm dialog", `document.getElementById('confirm-dialog').open`)
	assert.Contains(t, eval[string](t, tab, `document.getElementById('confirm-expiry').textContent`), "Expires at")
	tab.waitJS(t, "the expiry", `document.getElementById('confirm-expiry').textContent === 'This question has expired.'`)
	assert.True(t, eval[bool](t, tab, `document.getElementById('confirm-yes').disabled`))
	tab.do(t, chromedp.Click(chromedp.CSS("#confirm-cancel")))
	tab.send(t, "help")
	tab.waitReply(t, "Here is what I can show you")
	tab.checkQuiet(t)
}

// TestFailedTurn: a turn whose processor fails keeps nothing, so the page
// shows the problem and gives the message back to try again.
func TestFailedTurn(t *testing.T) {
	srv := newTestChatd(t, nil, 0)
	tab := newTab(t, srv)
	tab.open(t)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#processor"), "echo"))
	tab.send(t, "/fail")
	tab.waitJS(t, "the problem", `document.getElementById('status').dataset.kind === 'error'`)
	assert.Equal(t, "/fail", eval[string](t, tab, `document.getElementById('input').value`))
	assert.Zero(t, eval[int](t, tab, `document.querySelectorAll('#messages > li').length`))
	tab.send(t, "hello again")
	tab.waitReply(t, "hello again")
	tab.checkQuiet(t)
}

// requireReattach skips when this chatd has no thread list (and so no
// running_turn to reattach to).
func requireReattach(tb testing.TB, srv *httptest.Server) {
	tb.Helper()
	resp, err := srv.Client().Get(srv.URL + "/v1/threads")
	require.NoError(tb, err)
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		tb.Skip("this chatd cannot list threads or reattach to turns yet")
	}
}

// assertLabelled checks that every control on the page has an accessible
// name: a label, aria-label or aria-labelledby, or its own text.
func assertLabelled(tb testing.TB, t *tab) {
	tb.Helper()
	unlabelled := eval[[]string](tb, t, `[...document.querySelectorAll('input, select, textarea, button')].filter((c) => {
		if (c.type === 'hidden') return false;
		if (c.labels && c.labels.length) return false;
		if (c.getAttribute('aria-label') || c.getAttribute('aria-labelledby')) return false;
		return !(c.textContent || '').trim();
	}).map((c) => c.outerHTML)`)
	assert.Empty(tb, unlabelled)
}

// TestAPIKeyMode: the page asks for the key, keeps it in sessionStorage, and
// uses it.
func TestAPIKeyMode(t *testing.T) {
	auth, err := api.NewAPIKeyAuth([]api.APIKey{{Principal: "ana", Key: "s3cret-key"}})
	require.NoError(t, err)
	srv := newTestChatd(t, auth, 0)
	tab := newTab(t, srv)
	// The page waits for the key before it is ready, so navigate by hand.
	tab.do(t, chromedp.Navigate(tab.url))
	tab.waitJS(t, "the key dialog", `document.getElementById('key-dialog').open`)
	assertLabelled(t, tab)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#api-key"), "wrong"), chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)))
	tab.waitJS(t, "the key asked again", `document.getElementById('key-dialog').open && document.getElementById('key-note').textContent.includes('not accepted')`)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#api-key"), "s3cret-key"), chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)))
	tab.waitJS(t, "the page", `document.body.dataset.ready === 'true'`)
	assert.Equal(t, "s3cret-key", eval[string](t, tab, `sessionStorage.getItem('chatd.key')`))
	tab.send(t, "help")
	tab.waitReply(t, "Here is what I can show you")
	// A reload keeps the key for this tab.
	tab.open(t)
	assert.False(t, eval[bool](t, tab, `document.getElementById('key-dialog').open`))
	tab.waitReply(t, "Here is what I can show you")
	tab.checkQuiet(t)
}

// TestXSSCorpus posts internal/render's XSS corpus as turns and shows them
// in the page: nothing runs, nothing turns into markup.
func TestXSSCorpus(t *testing.T) {
	srv := newTestChatd(t, nil, 0)
	data, err := os.ReadFile(filepath.Join("..", "render", "testdata", "xss.json"))
	require.NoError(t, err)
	var corpus []map[string]any
	require.NoError(t, json.Unmarshal(data, &corpus))

	thread := postJSON[map[string]any](t, srv, "/v1/threads", map[string]any{"processor": "echo"}, http.StatusCreated)
	threadID := thread["id"].(string)
	var posted []string
	for _, entry := range corpus {
		name := entry["name"].(string)
		delete(entry, "name")
		resp := post(t, srv, "/v1/threads/"+threadID+"/turns", entry)
		if resp.StatusCode == http.StatusUnprocessableEntity {
			continue // refused at the door: chatd never stores it
		}
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
		posted = append(posted, name)
	}
	require.NotEmpty(t, posted)

	tab := newTab(t, srv)
	tab.open(t)
	tab.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('chatd.thread', %q)`, threadID)))
	tab.open(t)
	for eval[bool](t, tab, `!document.getElementById('older').hidden`) {
		tab.do(t, chromedp.Click(chromedp.CSS("#older")))
		tab.waitJS(t, "older messages", `!document.getElementById('older').disabled`)
	}
	tab.waitJS(t, "the corpus", fmt.Sprintf(`document.querySelectorAll('#messages > li').length === %d`, 2*len(posted)))
	// Give anything that would run (onerror, onload, media) its chance.
	tab.do(t, chromedp.Evaluate[chromedp.Void](`new Promise((r) => setTimeout(r, 500))`, chromedp.EvalAwaitPromise))

	found := eval[[]string](t, tab, `(() => {
		const bad = [];
		const log = document.getElementById('messages');
		for (const n of log.querySelectorAll('script, iframe, object, embed, svg, math, style, link, meta, base, form')) bad.push(n.outerHTML);
		for (const n of log.querySelectorAll('*')) {
			for (const a of n.attributes) {
				if (/^on/i.test(a.name) || a.name === 'style' || a.name === 'srcdoc') bad.push(a.name + ' on ' + n.tagName);
				if ((a.name === 'href' || a.name === 'src') && !/^(https?:|mailto:|data:(image\/(png|jpeg|gif|webp|avif)|audio\/[a-z0-9.+-]+);base64,)/i.test(a.value)) bad.push(a.name + '=' + a.value);
			}
		}
		return bad;
	})()`)
	assert.Empty(t, found)
	assert.Equal(t, "<script>alert('xss')</script>", eval[string](t, tab, `document.querySelector('#messages .msg-user .msg-text').textContent`))
	assert.Equal(t, 1, eval[int](t, tab, `document.scripts.length`), "only the page's own script")
	// What is safe is still shown: the PNG as an image, https and mailto as links.
	assert.Positive(t, eval[int](t, tab, `document.querySelectorAll('#messages img[src^="data:image/png;base64,"]').length`))
	assert.Positive(t, eval[int](t, tab, `document.querySelectorAll('#messages a[href^="mailto:"]').length`))
	assert.Zero(t, eval[int](t, tab, `document.querySelectorAll('#messages img:not([src^="data:image/png"])').length`), "no SVG or HTML as an image")
	tab.checkQuiet(t)
}

func post(tb testing.TB, srv *httptest.Server, path string, body any) *http.Response {
	tb.Helper()
	data, err := json.Marshal(body)
	require.NoError(tb, err)
	resp, err := srv.Client().Post(srv.URL+path, "application/json", bytes.NewReader(data))
	require.NoError(tb, err)
	tb.Cleanup(func() { resp.Body.Close() })
	return resp
}

func postJSON[T any](tb testing.TB, srv *httptest.Server, path string, body any, status int) T {
	tb.Helper()
	resp := post(tb, srv, path, body)
	require.Equal(tb, status, resp.StatusCode)
	var v T
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

// TestPageServed checks the page's headers: a strict Content-Security-Policy
// and no caching surprises.
func TestPageServed(t *testing.T) {
	srv := newTestChatd(t, nil, 0)
	for _, path := range []string{"/", "/ui/app.js", "/ui/app.css"} {
		resp, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}
	resp, err := srv.Client().Get(srv.URL + "/ui/missing.js")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json"))
}
