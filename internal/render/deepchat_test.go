package render

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
)

// deepChatAttrs adds what a deep-chat message may carry beyond Message's
// elements: suggestion buttons and a question's form.
var deepChatAttrs = map[string]map[string]bool{
	"button": {"class": true, "type": true, "data-action": true},
	"form":   {"class": true, "data-elicitation-id": true},
	"label":  {"class": true, "data-name": true, "data-kind": true},
	"input":  {"type": true, "name": true, "value": true, "required": true, "checked": true, "step": true, "min": true, "max": true},
	"select": {"name": true, "required": true, "multiple": true},
	"option": {"value": true, "selected": true},
	"output": {"class": true},
	"a":      {"href": true, "rel": true, "target": true},
	"strong": {"class": true},
}

func assertDeepChatSafe(tb testing.TB, s string) {
	tb.Helper()
	all := make(map[string]map[string]bool, len(allowedAttrs)+len(deepChatAttrs))
	maps.Copy(all, allowedAttrs)
	maps.Copy(all, deepChatAttrs)
	assertSafeWith(tb, s, all)
}

func TestDeepChatXSSCorpus(t *testing.T) {
	r := newTestRenderer(t)
	for _, e := range loadCorpus(t) {
		t.Run(e.Name, func(t *testing.T) {
			var m blocks.Message
			if err := json.Unmarshal(e.messageJSON(t), &m); err != nil {
				t.Skipf("not a valid message: %v", err)
			}
			// The message's text is the question's too, and its title.
			q := &Question{ID: e.Message, Message: e.Message, Buttons: []string{e.Message},
				Schema: json.RawMessage(`{"type":"object","properties":{` + mustQuote(t, e.Message) + `:{"type":"string","title":` + mustQuote(t, e.Message) + `,"default":` + mustQuote(t, e.Message) + `}}}`)}
			// As a URL-mode question's page, too: https://<text>.
			page := &Question{ID: q.ID, Message: q.Message, URL: "https://" + e.Message, Buttons: []string{"Done", e.Message}}
			for _, q := range []*Question{nil, q, {ID: q.ID, Message: q.Message, Schema: q.Schema}, page} {
				got, err := r.DeepChat(m, q)
				require.NoError(t, err)
				assertDeepChatSafe(t, got)
			}
		})
	}
}

func mustQuote(tb testing.TB, s string) string {
	tb.Helper()
	b, err := json.Marshal(s)
	require.NoError(tb, err)
	return string(b)
}

func TestDeepChatForm(t *testing.T) {
	r := newTestRenderer(t)
	schema := json.RawMessage(`{"type":"object","properties":{
		"title":{"type":"string","title":"Title","description":"What it is called"},
		"email":{"type":"string","format":"email"},
		"n":{"type":"number","minimum":0,"maximum":9.5,"default":2},
		"room":{"type":"string","enum":["a","b"],"enumNames":["Room A","Room B"],"default":"b"},
		"tags":{"type":"array","items":{"type":"string","anyOf":[{"const":"x","title":"X"},{"const":"y","title":"Y"}]},"default":["y"]},
		"ok":{"type":"boolean"}},"required":["title","room"]}`)
	got, err := r.DeepChat(blocks.NewMessage(blocks.RoleAssistant, "Book", nil, nil), &Question{ID: "e1", Message: "Book it", Schema: schema})
	require.NoError(t, err)
	assertDeepChatSafe(t, got)
	for _, want := range []string{
		`<form class="chatd-question" data-elicitation-id="e1"><p class="chatd-question-message">Book it</p>`,
		`<label class="chatd-field" data-name="title" data-kind="input"><span>Title *</span><input type="text" name="title" value="" required><small>What it is called</small></label>`,
		`<input type="email" name="email" value="">`,
		`<input type="number" name="n" value="2" step="any" min="0" max="9.5">`,
		`<select name="room" required><option value="a">Room A</option><option value="b" selected>Room B</option></select>`,
		`<select name="tags" multiple><option value="x">X</option><option value="y" selected>Y</option></select>`,
		`<input type="checkbox" name="ok">`,
		`<button type="button" class="chatd-decline" data-action="decline">Decline</button>`,
	} {
		assert.Contains(t, got, want)
	}
	// Fields keep the schema's order.
	assert.Less(t, strings.Index(got, `name="title"`), strings.Index(got, `name="ok"`))
	assert.Less(t, strings.Index(got, `name="room"`), strings.Index(got, `name="tags"`))
}

// TestDeepChatConsent: a URL-mode question is a card with the whole URL
// as written, its host in bold, a link that opens a new tab without opener
// or referrer, and its one-click answers; a URL chatd does not link to is
// not a link at all.
func TestDeepChatConsent(t *testing.T) {
	r := newTestRenderer(t)
	m := blocks.NewMessage(blocks.RoleAssistant, "Pay", nil, nil)
	page := `https://bank.example:8443/pay?order=7&amount=12.50#now`
	got, err := r.DeepChat(m, &Question{ID: "e1", Message: "Pay for the order", URL: page, Buttons: []string{"Done", "Cancel"}})
	require.NoError(t, err)
	assertDeepChatSafe(t, got)
	assert.Contains(t, got, `<a href="https://bank.example:8443/pay?order=7&amp;amount=12.50#now" target="_blank" rel="noopener noreferrer">`+
		`https://<strong class="chatd-consent-host">bank.example:8443</strong>/pay?order=7&amp;amount=12.50#now</a>`)
	assert.Contains(t, got, `<button class="deep-chat-button deep-chat-suggestion-button" type="button">Done</button><button class="deep-chat-button deep-chat-suggestion-button" type="button">Cancel</button>`)
	assert.NotContains(t, got, "chatd-submit", "no form fields, no Send")

	for _, bad := range []string{"javascript:alert(1)", "http://bank.example/pay", "https://user:pw@bank.example/", "data:text/html,<b>x</b>"} {
		got, err := r.DeepChat(m, &Question{ID: "e1", Message: "Pay", URL: bad, Buttons: []string{"Cancel"}})
		require.NoError(t, err)
		assertDeepChatSafe(t, got)
		assert.NotContains(t, got, "<a ", bad)
		assert.Contains(t, got, "This page cannot be shown here.", bad)
	}
}

// TestDeepChatPlainMessage: a message of text alone, rendered without the
// template, is what the template renders.
func TestDeepChatPlainMessage(t *testing.T) {
	texts := []string{"", "hi", "a\n\nb\nc", "\"'&<>+\x00 é \xff", "<script>alert('xss')</script>", "\r\n\r\nx\r\ny\n\n\n"}
	for _, e := range loadCorpus(t) {
		texts = append(texts, e.Message)
	}
	for _, text := range texts {
		for _, role := range []string{"user", "assistant", "unknown"} {
			want, err := (&Renderer{}).execute("deepchat", deepChatView{messageView: messageView{Role: role, Paragraphs: paragraphs(text)}})
			require.NoError(t, err)
			assert.Equal(t, want, plainMessage(role, paragraphs(text)), "%q", text)
		}
	}
}

func FuzzDeepChatPlainMessage(f *testing.F) {
	f.Add("a\n\nb+c<d>")
	f.Fuzz(func(t *testing.T, text string) {
		want, err := (&Renderer{}).execute("deepchat", deepChatView{messageView: messageView{Role: "assistant", Paragraphs: paragraphs(text)}})
		require.NoError(t, err)
		if got := plainMessage("assistant", paragraphs(text)); got != want {
			t.Fatalf("%q: got %q, want %q", text, got, want)
		}
	})
}
