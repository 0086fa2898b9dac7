package ui_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
)

// testPNG is a real 3×2 image, so the browser can decode what it shows.
func testPNG(tb testing.TB) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	require.NoError(tb, png.Encode(&buf, img))
	return buf.Bytes()
}

// TestAttachments attaches files through the page three ways — the attach
// button's file input, a paste into the composer, a drop on the chat — and
// sends them with a message, in API-key mode: each is uploaded to the
// thread and linked in the turn, the image is shown inline and the other
// files are downloads, all fetched with the key.
func TestAttachments(t *testing.T) {
	auth, err := api.NewAPIKeyAuth([]api.APIKey{{Principal: "ana", Key: "s3cret-key"}})
	require.NoError(t, err)
	srv := newTestChatd(t, auth, 0)
	tab := newTab(t, srv)
	tab.do(t, chromedp.Navigate(tab.url))
	tab.waitJS(t, "the key dialog", `document.getElementById('key-dialog').open`)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#api-key"), "s3cret-key"), chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)))
	tab.waitJS(t, "the page", `document.body.dataset.ready === 'true'`)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#processor"), "echo"))

	pic := testPNG(t)
	path := filepath.Join(t.TempDir(), "shot.png")
	require.NoError(t, os.WriteFile(path, pic, 0o600))
	tab.do(t, chromedp.SetUploadFiles(chromedp.CSS("#file-input"), []string{path}))
	tab.waitJS(t, "the chosen file listed", `document.querySelectorAll('#attachments li').length === 1`)
	// A paste and a drop, as the browser delivers them: events with a
	// DataTransfer holding files.
	eval[bool](t, tab, `(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['pasted notes'], 'notes.txt', { type: 'text/plain' }));
		document.getElementById('input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
		const dropped = new DataTransfer();
		dropped.items.add(new File(['%PDF-1.7\n%\xe2\xe3\n1 0 obj\n<<>>\nendobj\n'], 'report.pdf', { type: 'application/pdf' }));
		document.querySelector('.chat').dispatchEvent(new DragEvent('drop', { dataTransfer: dropped, bubbles: true, cancelable: true }));
		return true;
	})()`)
	tab.waitJS(t, "three files listed", `document.querySelectorAll('#attachments li').length === 3`)

	tab.send(t, "what is in these?")
	tab.waitReply(t, "what is in these?")
	tab.waitJS(t, "the attachments emptied", `document.querySelectorAll('#attachments li').length === 0`)

	// The turn links the three stored files.
	tab.waitJS(t, "the thread listed", `document.querySelector('#threads [aria-current]')`)
	threadID := eval[string](t, tab, `document.querySelector('#threads [aria-current]').closest('li').dataset.id`)
	links := evalAsync[[]map[string]any](t, tab, `(async () => {
		const r = await fetch('/v1/threads/`+threadID+`/messages', { headers: { Authorization: 'Bearer s3cret-key' } });
		const page = await r.json();
		return page.messages[0].content_blocks;
	})()`)
	require.Len(t, links, 3, "thread %s", threadID)
	var names []string
	for _, l := range links {
		assert.Equal(t, "resource_link", l["type"])
		assert.Regexp(t, `^chatd:file/`, l["uri"])
		names = append(names, l["name"].(string))
	}
	assert.Equal(t, []string{"shot.png", "notes.txt", "report.pdf"}, names)

	// The image is shown inline from a blob: URL fetched with the key, and
	// decodes; the others are downloads.
	user := `#messages > li.msg-user`
	tab.waitJS(t, "the image shown", `(() => { const img = document.querySelector('`+user+` img.file-image');
		return img && img.src.startsWith('blob:') && img.complete && img.naturalWidth === 3; })()`)
	assert.Equal(t, []string{"notes.txt", "report.pdf"}, eval[[]string](t, tab, `[...document.querySelectorAll('`+user+` a.file-download')].map((a) => a.textContent)`))
	// A download fetches the bytes with the key and saves them under the
	// file's name.
	dir := t.TempDir()
	_, err = chromedp.Call(tab.ctx, browser.SetDownloadBehavior,
		browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
	require.NoError(t, err)
	tab.do(t, chromedp.Click(chromedp.CSS(user+` a.file-download`)))
	var saved []byte
	require.Eventually(t, func() bool {
		saved, err = os.ReadFile(filepath.Join(dir, "notes.txt"))
		return err == nil && len(saved) > 0
	}, waitLimit, 50*time.Millisecond, "the download saved")
	assert.Equal(t, "pasted notes", string(saved))
	tab.checkQuiet(t)
}

// waitLimit bounds a wait for the browser's own work (a download); the
// wait ends as soon as it is done.
const waitLimit = 20 * time.Second

// evalAsync returns the value of a JavaScript expression, awaiting the
// promise it gives.
func evalAsync[T any](tb testing.TB, t *tab, expr string) T {
	tb.Helper()
	v, err := chromedp.Run(t.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(tb, err, expr)
	return v
}
