package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/turn"
)

// visiting reports a tool's progress, waits for the test, then asks the
// user to visit a page (a URL-mode question, as the agent bridges one from
// an MCP server); the answer ends the turn.
type visiting struct {
	page string
	gate chan struct{}
}

func (visiting) Describe() string { return "Sends the user to a page." }

func (v visiting) Process(ctx context.Context, in processor.Input, emit processor.Emit) (processor.Output, error) {
	if in.Resume != nil {
		return processor.Output{Text: "Paid: " + string(in.Resume.Result.Action)}, nil
	}
	for _, item := range []map[string]any{
		{"id": "call_1", "label": "Running shop__pay", "state": "running", "status": "working", "statusMessage": "Queued at the bank"},
		{"id": "call_1", "label": "Running shop__pay", "state": "running", "progress": 1, "total": 4, "message": "Contacting the bank"},
	} {
		emit(processor.Delta{Meta: map[string]any{blocks.MetaStatusItem: item}})
		select {
		case <-v.gate:
		case <-ctx.Done():
			return processor.Output{}, ctx.Err()
		}
	}
	req, err := elicit.NewURLRequest("Pay for the order", v.page, "pay-1")
	if err != nil {
		return processor.Output{}, err
	}
	return processor.Output{Text: "Pay for the order", Pause: &processor.Pause{Request: req, State: []byte(`{}`)}}, nil
}

// newBank serves a page on a loopback origin of its own, counting the
// requests it gets (any, and of the page itself); pageURL is the page.
func newBank(t *testing.T) (bank *httptest.Server, pageURL string, requests, fetched *atomic.Int64) {
	t.Helper()
	requests, fetched = new(atomic.Int64), new(atomic.Int64)
	bank = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path == "/pay" {
			fetched.Add(1)
		}
		_, _ = w.Write([]byte("<!doctype html><title>Bank</title>Paid."))
	}))
	t.Cleanup(bank.Close)
	return bank, bank.URL + "/pay?order=7&amount=12.50", requests, fetched
}

// TestURLConsentCard: a running tool's progress is a bar in the status
// line; a URL-mode question is a card with the whole URL, its host in bold,
// that the browser does not fetch until the user clicks it (in a new tab,
// without opener or referrer); Done answers accept.
func TestURLConsentCard(t *testing.T) {
	bank, pageURL, requests, fetched := newBank(t)
	gate := make(chan struct{})
	srv := newTestChatd(t, nil, 0, func(_ *api.Deps, _ *turn.Config, procs map[string]processor.Processor) {
		procs["visiting"] = visiting{page: pageURL, gate: gate}
	})
	require.NotEqual(t, srv.URL, bank.URL, "the page is on another origin")
	tab := newTab(t, srv)
	tab.open(t)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#processor"), "visiting"))
	tab.send(t, "Buy it")

	tab.waitJS(t, "the task's status", `document.querySelector('.streaming .status-item .status-message')?.textContent === 'Queued at the bank'`)
	gate <- struct{}{}
	tab.waitJS(t, "the progress bar", `document.querySelector('.streaming .status-item progress.status-progress')`)
	assert.Equal(t, "4", eval[string](t, tab, `document.querySelector('.status-progress').getAttribute('max')`))
	assert.Equal(t, "1", eval[string](t, tab, `document.querySelector('.status-progress').getAttribute('value')`))
	assert.Equal(t, "Contacting the bank", eval[string](t, tab, `document.querySelector('.status-item .status-message').textContent`))
	gate <- struct{}{}

	tab.waitJS(t, "the consent card", `document.querySelector('#pending .consent #consent-open')`)
	link := `document.getElementById('consent-open')`
	assert.Equal(t, pageURL, eval[string](t, tab, link+`.href`))
	assert.Equal(t, pageURL, eval[string](t, tab, link+`.textContent`), "the whole URL is shown")
	assert.Equal(t, bank.Listener.Addr().String(), eval[string](t, tab, link+`.querySelector('strong.consent-host').textContent`), "its host in bold")
	assert.Equal(t, "_blank", eval[string](t, tab, link+`.target`))
	assert.Equal(t, "noopener noreferrer", eval[string](t, tab, link+`.rel`))
	assert.Equal(t, "Pay for the order", eval[string](t, tab, `document.querySelector('.consent-message').textContent`))
	assert.True(t, eval[bool](t, tab, `document.getElementById('input').disabled`), "the question is pending")
	assert.Zero(t, requests.Load(), "nothing of the other origin is fetched before the click")

	tab.do(t, chromedp.Click(chromedp.CSS("#consent-open")))
	require.Eventually(t, func() bool { return fetched.Load() == 1 }, time.Minute, 20*time.Millisecond, "the click opens the page")
	assert.Empty(t, eval[string](t, tab, `document.getElementById('consent-open') ? '' : 'gone'`), "the card stays until the user says Done")

	tab.do(t, chromedp.Click(chromedp.CSS("#consent-done")))
	tab.waitReply(t, "Paid: accept")
	assert.True(t, eval[bool](t, tab, `document.getElementById('pending').hidden`))
	assert.Equal(t, int64(1), fetched.Load(), "only the click fetched the page")
	tab.checkQuiet(t)
}

// TestDeepChatURLConsent: in deep-chat, a URL-mode question is a card
// with the whole URL, its host in bold, that the browser does not fetch
// until the user clicks it (a new tab, without opener or referrer); its
// Done button answers accept with one click.
func TestDeepChatURLConsent(t *testing.T) {
	bank, pageURL, requests, fetched := newBank(t)
	gate := make(chan struct{})
	close(gate) // no waiting between the status items
	s := newDeepChatSite(t, func(_ *api.Deps, _ *turn.Config, procs map[string]processor.Processor) {
		procs["visiting"] = visiting{page: pageURL, gate: gate}
	})
	thread := s.newThread(t, "visiting")
	s.open(t, thread)
	s.send(t, "Buy it", `chatd-consent-url`)

	link := inChat(`[...root.querySelectorAll("form.chatd-question .chatd-consent-url a")].at(-1)`)
	assert.Equal(t, pageURL, eval[string](t, s.tab, link+`.href`))
	assert.Equal(t, pageURL, eval[string](t, s.tab, link+`.textContent`), "the whole URL is shown")
	assert.Equal(t, bank.Listener.Addr().String(), eval[string](t, s.tab, link+`.querySelector("strong").textContent`), "its host in bold")
	assert.Equal(t, "_blank", eval[string](t, s.tab, link+`.target`))
	assert.Equal(t, "noopener noreferrer", eval[string](t, s.tab, link+`.rel`))
	assert.Zero(t, requests.Load(), "nothing of the other origin is fetched before the click")
	require.True(t, s.pending(t, thread))

	s.tab.do(t, chromedp.Evaluate[chromedp.Void](link+`.click()`))
	require.Eventually(t, func() bool { return fetched.Load() == 1 }, time.Minute, 20*time.Millisecond, "the click opens the page")
	require.True(t, s.pending(t, thread), "opening the page answers nothing")

	n := s.aiCount(t)
	s.tab.do(t, chromedp.Evaluate[chromedp.Void](inChat(`[...root.querySelectorAll("form.chatd-question button.deep-chat-suggestion-button")].findLast((b) => b.textContent === "Done").click()`)))
	s.waitAI(t, n, "Paid: accept")
	assert.False(t, s.pending(t, thread), "Done answered the question")
	assert.Equal(t, int64(1), fetched.Load(), "only the click fetched the page")
	s.checkOrigins(t)
}
