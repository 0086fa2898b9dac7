package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/turn"
)

// deepChatDir holds the pinned deep-chat package (its package-lock.json),
// which scripts/ensure-node-deps.sh installs with npm ci.
var deepChatDir = filepath.Join("testdata", "deepchat")

// deepChatPage is the page a site puts deep-chat on, served from its own
// origin: the element, chatd.js's class utilities, the thread's history.
// A font of its own keeps deep-chat from loading its default one from a
// third party.
const deepChatPage = `<!doctype html><html><head><meta charset="utf-8"><title>deep-chat on chatd</title></head>
<body><deep-chat id="chat" style="width: 640px; height: 720px; font-family: system-ui, sans-serif"></deep-chat>
<script type="module">
import "/deep-chat.js";
const chatd = %q;
const {htmlClassUtilities} = await import(chatd + "/deep-chat/chatd.js");
const thread = new URLSearchParams(location.search).get("thread");
const headers = {"X-Chatd-Principal": "browser-user"};
const chat = document.getElementById("chat");
chat.htmlClassUtilities = htmlClassUtilities;
chat.errorMessages = {displayServiceErrorMessages: true};
chat.connect = {url: chatd + "/v1/deep-chat", stream: true, headers, additionalBodyProps: {thread_id: thread}};
const res = await fetch(chatd + "/v1/deep-chat/history?thread_id=" + encodeURIComponent(thread), {headers});
chat.history = await res.json();
document.body.dataset.ready = "true";
</script></body></html>`

// deepChatBundle is deep-chat's bundle, or a failure under CI or
// CHATD_FRONTEND_TESTS, a skip elsewhere, when it is not installed.
func deepChatBundle(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(deepChatDir, "node_modules", "deep-chat", "dist", "deepChat.bundle.js")
	if _, err := os.Stat(path); err != nil {
		msg := "deep-chat is not installed: run scripts/ensure-node-deps.sh (make test does)"
		if os.Getenv("CI") == "true" || os.Getenv("CHATD_FRONTEND_TESTS") == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return path
}

// deepChatSite is chatd and a site on another origin that embeds deep-chat.
type deepChatSite struct {
	chatd, site *httptest.Server
	tab         *tab

	mu       sync.Mutex
	requests []string
}

func newDeepChatSite(tb testing.TB, opts ...chatdOption) *deepChatSite {
	tb.Helper()
	bundle := deepChatBundle(tb)
	var chatdURL string
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/deep-chat.js":
			w.Header().Set("Content-Type", "text/javascript")
			http.ServeFile(w, r, bundle)
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, deepChatPage, chatdURL)
		default:
			http.NotFound(w, r)
		}
	}))
	tb.Cleanup(site.Close)
	chatd := newTestChatd(tb, api.HeaderAuth{Header: "X-Chatd-Principal"}, 5*time.Millisecond,
		append([]chatdOption{func(d *api.Deps, _ *turn.Config, _ map[string]processor.Processor) {
			d.Config.CORSOrigins = []string{site.URL}
			d.Config.PrincipalHeader = "X-Chatd-Principal"
		}}, opts...)...)
	chatdURL = chatd.URL
	s := &deepChatSite{chatd: chatd, site: site, tab: newTab(tb, site)}
	_, err := chromedp.Call(s.tab.ctx, network.Enable, network.EnableParams{})
	require.NoError(tb, err)
	sent := chromedp.Events(s.tab.ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range sent {
			if err != nil {
				return
			}
			s.mu.Lock()
			s.requests = append(s.requests, ev.Request.URL)
			s.mu.Unlock()
		}
	}()
	return s
}

// newThread creates a thread of proc for the page's user.
func (s *deepChatSite) newThread(tb testing.TB, proc string) string {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, s.chatd.URL+"/v1/threads", strings.NewReader(`{"processor":"`+proc+`"}`))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Chatd-Principal", "browser-user")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	require.Equal(tb, http.StatusCreated, resp.StatusCode)
	var th struct {
		ID string `json:"id"`
	}
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&th))
	return th.ID
}

// open loads the site's page on thread.
func (s *deepChatSite) open(tb testing.TB, thread string) {
	tb.Helper()
	s.tab.do(tb, chromedp.Navigate(s.site.URL+"/?thread="+thread), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
}

// inChat is JavaScript evaluated with root bound to the element's shadow
// root and chat to the element.
func inChat(expr string) string {
	return `(() => { const chat = document.getElementById("chat"); const root = chat.shadowRoot; return ` + expr + `; })()`
}

// aiCount is how many ai messages the element shows.
func (s *deepChatSite) aiCount(tb testing.TB) int {
	tb.Helper()
	return eval[int](tb, s.tab, inChat(`chat.getMessages().filter((m) => m.role === "ai").length`))
}

// send submits text as the user's message and waits for the ai message
// after it, whose html must contain want.
func (s *deepChatSite) send(tb testing.TB, text, want string) {
	tb.Helper()
	n := s.aiCount(tb)
	s.tab.do(tb, chromedp.Evaluate[chromedp.Void](inChat(fmt.Sprintf(`chat.submitUserMessage({text: %q})`, text))))
	s.waitAI(tb, n, want)
}

// waitAI waits for an ai message after the first n, the reply complete (the
// stream's last event overwrote its deltas), whose html contains want.
func (s *deepChatSite) waitAI(tb testing.TB, n int, want string) {
	tb.Helper()
	s.tab.waitJS(tb, "a reply with "+want, inChat(fmt.Sprintf(`(() => {
		const ai = chat.getMessages().filter((m) => m.role === "ai");
		return ai.length > %d && (ai[ai.length - 1].html || "").includes(%q) && !root.querySelector(".loading-message-text");
	})()`, n, want)))
}

// historyLen is how many messages the thread's deep-chat history holds:
// one per message, the recorded answers to questions among them.
func (s *deepChatSite) historyLen(tb testing.TB, thread string) int {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, s.chatd.URL+"/v1/deep-chat/history?thread_id="+thread, nil)
	require.NoError(tb, err)
	req.Header.Set("X-Chatd-Principal", "browser-user")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	var items []map[string]string
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&items))
	return len(items)
}

// pending reports whether the thread waits for an answer.
func (s *deepChatSite) pending(tb testing.TB, thread string) bool {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, s.chatd.URL+"/v1/threads/"+thread, nil)
	require.NoError(tb, err)
	req.Header.Set("X-Chatd-Principal", "browser-user")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	var th struct {
		Pending json.RawMessage `json:"pending_elicitation"`
	}
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&th))
	return len(th.Pending) > 0 && string(th.Pending) != "null"
}

// checkOrigins asserts the page asked nothing of anyone but chatd and the
// site.
func (s *deepChatSite) checkOrigins(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(tb, s.requests)
	for _, u := range s.requests {
		if strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:") {
			continue
		}
		assert.True(tb, strings.HasPrefix(u, s.chatd.URL+"/") || strings.HasPrefix(u, s.site.URL+"/"), "request off chatd's and the site's origins: %s", u)
	}
}

// TestDeepChat drives the real deep-chat element on a site's page against
// chatd: a streamed reply, a card, a suggested reply clicked, a confirm
// answered with its button, a form answered through chatd.js, the history
// after a reload, and an error shown.
func TestDeepChat(t *testing.T) {
	s := newDeepChatSite(t)
	thread := s.newThread(t, "demo")
	s.open(t, thread)

	s.send(t, "Stream a story", `class="chatd-message chatd-assistant"`)
	s.send(t, "card", `chatd-entity`)
	assert.Positive(t, eval[int](t, s.tab, inChat(`root.querySelectorAll(".chatd-entity a[href^='https://site.example/']").length`)), "the card links to the site")

	// A suggested reply is a deep-chat suggestion button: a click sends it.
	n := s.aiCount(t)
	s.tab.do(t, chromedp.Evaluate[chromedp.Void](inChat(`[...root.querySelectorAll("button.deep-chat-suggestion-button")].findLast((b) => b.textContent === "Cite your sources").click()`)))
	s.waitAI(t, n, "chatd-sources")

	// A confirm is answered with its No button.
	s.send(t, "Delete 10 items", `<form class="chatd-question"`)
	require.True(t, s.pending(t, thread))
	n = s.aiCount(t)
	s.tab.do(t, chromedp.Evaluate[chromedp.Void](inChat(`[...root.querySelectorAll("form.chatd-question button.deep-chat-suggestion-button")].findLast((b) => b.textContent === "No").click()`)))
	s.waitAI(t, n, `class="chatd-message chatd-assistant"`)
	assert.False(t, s.pending(t, thread), "the confirm is answered")

	// A form is answered through chatd.js: an invalid answer is shown at
	// the form, a valid one posts and shows the reply.
	s.send(t, "Book an event", `<form class="chatd-question"`)
	n = s.aiCount(t)
	form := `[...root.querySelectorAll("form.chatd-question")].at(-1)`
	s.tab.do(t, chromedp.Evaluate[chromedp.Void](inChat(`(() => {
		const f = `+form+`;
		f.querySelector("[name=title]").value = "Drupal meetup";
		f.querySelector("[name=date]").value = "2026-12-24";
		f.querySelector("[name=attendees]").value = "12";
		f.querySelector("[name=room]").value = "Borealis";
		f.requestSubmit();
	})()`)))
	s.tab.waitJS(t, "the answer's reply", inChat(fmt.Sprintf(`chat.getMessages().filter((m) => m.role === "ai").length > %d`, n)))
	assert.False(t, s.pending(t, thread), "the form is answered")
	assert.Contains(t, eval[string](t, s.tab, inChat(`chat.getMessages().at(-1).html`)), "Drupal meetup")

	// After a reload the history shows the conversation.
	s.open(t, thread)
	s.tab.waitJS(t, "the history", inChat(fmt.Sprintf(`chat.getMessages().length === %d`, s.historyLen(t, thread))))
	assert.Positive(t, eval[int](t, s.tab, inChat(`root.querySelectorAll(".chatd-entity").length`)), "the card again")
	s.tab.screenshot(t, "deep-chat.png")
	s.tab.checkQuiet(t)

	// A message while a question is pending is refused, and the element
	// shows chatd's error.
	s.send(t, "Delete 10 items", `<form class="chatd-question"`)
	s.tab.do(t, chromedp.Evaluate[chromedp.Void](inChat(`chat.submitUserMessage({text: "something else"})`)))
	s.tab.waitJS(t, "the error", inChat(`[...root.querySelectorAll(".error-message-text")].some((e) => e.textContent.includes("waiting for the answer"))`))
	s.checkOrigins(t)
}

// TestDeepChatXSSCorpus shows render's XSS corpus through deep-chat's
// history: nothing in it runs script in the element.
func TestDeepChatXSSCorpus(t *testing.T) {
	s := newDeepChatSite(t)
	thread := s.newThread(t, "echo")
	data, err := os.ReadFile(filepath.Join("..", "render", "testdata", "xss.json"))
	require.NoError(t, err)
	var corpus []map[string]any
	require.NoError(t, json.Unmarshal(data, &corpus))
	posted := 0
	for _, entry := range corpus {
		name := entry["name"].(string)
		delete(entry, "name")
		body, err := json.Marshal(entry)
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, s.chatd.URL+"/v1/threads/"+thread+"/turns", strings.NewReader(string(body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Chatd-Principal", "browser-user")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnprocessableEntity {
			continue // refused at the door: chatd never stores it
		}
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
		posted++
	}
	require.Positive(t, posted)
	// The page's own scripts would see a handler that ran: every alert,
	// confirm and prompt is recorded as a dialog by the tab.
	s.open(t, thread)
	s.tab.waitJS(t, "the corpus", inChat(fmt.Sprintf(`chat.getMessages().length === %d`, 2*posted)))
	// Through the endpoint too: one of the corpus's messages as a turn.
	s.send(t, "<img src=x onerror=alert('xss')>", "&lt;img")
	s.tab.do(t, chromedp.Evaluate[chromedp.Void](`new Promise((r) => setTimeout(r, 500))`, chromedp.EvalAwaitPromise))
	found := eval[[]string](t, s.tab, inChat(`(() => {
		const bad = [];
		for (const n of root.querySelectorAll(".chatd-message script, .chatd-message iframe, .chatd-message object, .chatd-message embed, .chatd-message svg, .chatd-message style")) bad.push(n.outerHTML);
		for (const n of root.querySelectorAll(".chatd-message, .chatd-message *")) {
			for (const a of n.attributes) {
				// deep-chat styles its suggestion buttons itself.
				const own = a.name === "style" && n.matches("button.deep-chat-suggestion-button");
				if (/^on/i.test(a.name) || (a.name === "style" && !own) || a.name === "srcdoc") bad.push(a.name + " on " + n.tagName);
				if ((a.name === "href" || a.name === "src") && !/^(https?:|mailto:|data:(image\/(png|jpeg|gif|webp|avif)|audio\/[a-z0-9.+-]+);base64,)/i.test(a.value)) bad.push(a.name + "=" + a.value);
			}
		}
		return bad;
	})()`))
	assert.Empty(t, found)
	assert.Positive(t, eval[int](t, s.tab, inChat(`root.querySelectorAll(".chatd-message img[src^='data:image/png;base64,']").length`)), "safe images are shown")
	s.tab.checkQuiet(t)
	s.checkOrigins(t)
}
