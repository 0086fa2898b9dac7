package ui_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/turn"
)

// withEntityURL links entities through template, in the page and in the
// server renderer.
func withEntityURL(tb testing.TB, template string) chatdOption {
	return func(d *api.Deps, _ *turn.Config, _ map[string]processor.Processor) {
		d.UI, d.Renderer = mustPageAndRenderer(tb, template)
	}
}

// TestEntityLinksAgree holds the page to internal/render's entity link
// corpus, under each of its templates: every entity: link chatd accepts
// points where the corpus says, or is plain text, in the page and in the
// server's ?render=html alike.
func TestEntityLinksAgree(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "render", "testdata", "entity_links.json"))
	require.NoError(t, err)
	var corpus struct {
		Templates map[string]string   `json:"templates"`
		Cases     []map[string]string `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(data, &corpus))
	for name, template := range corpus.Templates {
		t.Run(name, func(t *testing.T) {
			srv := newTestChatd(t, nil, 0, withEntityURL(t, template))
			thread := postJSON[map[string]any](t, srv, "/v1/threads", map[string]any{"processor": "echo"}, http.StatusCreated)
			threadID := thread["id"].(string)
			// want holds, in the order posted, where each accepted case's link
			// should point ("" for plain text).
			var uris, want []string
			for i, c := range corpus.Cases {
				label := fmt.Sprintf("case %d", i)
				resp := post(t, srv, "/v1/threads/"+threadID+"/turns", map[string]any{"message": label,
					"content_blocks": []map[string]any{{"type": "resource_link", "uri": c["uri"], "name": label}}})
				if resp.StatusCode == http.StatusUnprocessableEntity {
					continue // not a URI: refused at the door, never stored
				}
				require.Equal(t, http.StatusOK, resp.StatusCode, c["uri"])
				uris, want = append(uris, c["uri"]), append(want, c[name])
			}
			require.Contains(t, uris, "entity:node/1&destination=https://evil.example")
			require.Contains(t, uris, "entity:node/%2e%2e")

			assert.Equal(t, want, serverEntityLinks(t, srv, threadID), "the server renderer")

			tab := newTab(t, srv)
			tab.open(t)
			tab.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('chatd.thread', %q)`, threadID)))
			tab.open(t)
			for eval[bool](t, tab, `!document.getElementById('older').hidden`) {
				tab.do(t, chromedp.Click(chromedp.CSS("#older")))
				tab.waitJS(t, "older messages", `!document.getElementById('older').disabled`)
			}
			tab.waitJS(t, "the corpus", fmt.Sprintf(`document.querySelectorAll('#messages > li.msg-user').length === %d`, len(want)))
			got := eval[[]string](t, tab, `[...document.querySelectorAll('#messages > li.msg-user')].map((li) => {
				const a = li.querySelector('.block a');
				return a ? a.getAttribute('href') : '';
			})`)
			assert.Equal(t, want, got, "the page")
			for i := range want {
				if i < len(got) && want[i] != got[i] {
					t.Logf("%s: page links %q to %q, want %q", name, uris[i], got[i], want[i])
				}
			}
			tab.checkQuiet(t)
		})
	}
}

// serverEntityLinks returns, for each user message of the thread oldest
// first, where ?render=html links its block ("" when it does not).
func serverEntityLinks(tb testing.TB, srv *httptest.Server, threadID string) []string {
	tb.Helper()
	resp, err := srv.Client().Get(srv.URL + "/v1/threads/" + threadID + "/messages?limit=200&render=html")
	require.NoError(tb, err)
	defer resp.Body.Close()
	require.Equal(tb, http.StatusOK, resp.StatusCode)
	var page struct {
		Messages []struct {
			Role string `json:"role"`
			HTML string `json:"html"`
		} `json:"messages"`
	}
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&page))
	var links []string
	for _, m := range page.Messages {
		if m.Role != "user" {
			continue
		}
		link := ""
		if match := hrefAttr.FindStringSubmatch(m.HTML); match != nil {
			link = html.UnescapeString(match[1])
		}
		links = append(links, link)
	}
	return links
}

var hrefAttr = regexp.MustCompile(`href="([^"]*)"`)
