package ui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/processor/echo"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// crossOriginPage is a frontend served from another origin than chatd's: it
// creates a thread and streams a turn with fetch, sending the headers a real
// client sends (principal, Idempotency-Key), and reads the response's
// exposed headers. It records the outcome in window.outcome.
const crossOriginPage = `<!doctype html><html><head><meta charset="utf-8"><title>cross-origin client</title></head>
<body><script>
(async () => {
  const api = %q;
  const headers = {'Content-Type': 'application/json', 'X-Chatd-Principal': 'browser-user'};
  try {
    const created = await fetch(api + '/v1/threads', {method: 'POST', headers, body: JSON.stringify({processor: 'echo'})});
    const thread = await created.json();
    const resp = await fetch(api + '/v1/threads/' + thread.id + '/turns', {
      method: 'POST',
      headers: {...headers, 'Accept': 'text/event-stream', 'Idempotency-Key': 'k-1'},
      body: JSON.stringify({message: '/slow 5 hello from another origin'}),
    });
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const {done, value} = await reader.read();
      if (done) break;
      text += decoder.decode(value, {stream: true});
    }
    const events = text.split('\n').filter((l) => l.startsWith('event: ')).map((l) => l.slice(7));
    window.outcome = {location: created.headers.get('Location'), requestID: resp.headers.get('X-Request-ID'), events};
  } catch (e) {
    window.outcome = {error: String(e)};
  }
})();
</script></body></html>`

// newCORSChatd serves the API with CORS allowing origins.
func newCORSChatd(tb testing.TB, origins ...string) *httptest.Server {
	tb.Helper()
	st := store.NewMemory(store.Options{ThreadTTL: time.Hour, HistoryMax: 1000, IdempotencyTTL: time.Hour})
	tb.Cleanup(func() { _ = st.Close() })
	reg, err := processor.NewRegistry(map[string]processor.Processor{"echo": echo.New()}, "echo")
	require.NoError(tb, err)
	srv := httptest.NewServer(api.NewServer(api.Deps{
		Store: st, Engine: turn.New(turn.Deps{Store: st, Processors: reg}), Processors: reg, Auth: api.HeaderAuth{Header: "X-Chatd-Principal"},
		Config: api.Config{CORSOrigins: origins, PrincipalHeader: "X-Chatd-Principal"},
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// crossOrigin loads, in headless Chromium, a page from a frontend origin
// that talks to chatd at api, and returns the outcome it recorded.
func crossOrigin(tb testing.TB, allow func(frontend string) []string) map[string]any {
	tb.Helper()
	var apiURL string
	frontend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, crossOriginPage, apiURL)
	}))
	tb.Cleanup(frontend.Close)
	chatd := newCORSChatd(tb, allow(frontend.URL)...)
	apiURL = chatd.URL
	require.NotEqual(tb, frontend.URL, chatd.URL, "two origins")

	t := newTab(tb, frontend)
	t.do(tb, chromedp.Navigate(frontend.URL+"/"))
	t.waitJS(tb, "the page's outcome", "window.outcome")
	return eval[map[string]any](tb, t, "window.outcome")
}

// TestCrossOriginStream: a page on another origin runs a streamed turn
// against chatd when its origin is allowed, and is refused by the browser
// when it is not.
func TestCrossOriginStream(t *testing.T) {
	got := crossOrigin(t, func(frontend string) []string { return []string{frontend} })
	require.Nil(t, got["error"], "the allowed origin's fetches succeed")
	assert.Regexp(t, `^/v1/threads/[0-9a-f-]{36}$`, got["location"], "Location is exposed")
	assert.NotEmpty(t, got["requestID"], "X-Request-ID is exposed")
	assert.Equal(t, []any{"message.start", "text.delta", "text.delta", "text.delta", "text.delta", "turn.completed"}, got["events"])

	refused := crossOrigin(t, func(string) []string { return []string{"http://127.0.0.1:1"} })
	assert.Contains(t, refused["error"], "TypeError", "another origin is refused by the browser")
}
