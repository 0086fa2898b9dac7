package ui_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"

	"chatd/internal/api"
	"chatd/internal/processor"
	"chatd/internal/turn"
)

// numbered answers each turn with its number and the user's text, so every
// regenerated reply differs from the last.
type numbered struct{ n *atomic.Int64 }

func (numbered) Describe() string { return "Numbers its replies." }

func (p numbered) Process(ctx context.Context, in processor.Input, _ processor.Emit) (processor.Output, error) {
	return processor.Output{Text: fmt.Sprintf("reply %d to %s", p.n.Add(1), in.Message.Text)}, nil
}

func withNumbered() chatdOption {
	return func(_ *api.Deps, _ *turn.Config, procs map[string]processor.Processor) {
		procs["numbered"] = numbered{n: new(atomic.Int64)}
	}
}

// texts is the page's messages' texts, in order.
const pageTexts = `[...document.querySelectorAll('#messages > li .msg-text')].map((n) => n.textContent).join(' / ')`

// TestBranches regenerates a reply twice, flips back to the first reply
// with the picker, edits the first message, and reloads: the page shows
// the branch it was on, with its pickers.
func TestBranches(t *testing.T) {
	srv := newTestChatd(t, nil, 0, withNumbered())
	tab := newTab(t, srv)
	tab.open(t)
	tab.do(t, chromedp.SetValue(chromedp.CSS("#processor"), "numbered"))
	tab.send(t, "hello")
	tab.waitReply(t, "reply 1 to hello")
	tab.send(t, "again")
	tab.waitReply(t, "reply 2 to again")

	regenerate := func(want string) {
		tab.waitJS(t, "a Regenerate button", `!document.getElementById('send').disabled && document.querySelector('`+lastAssistant+` .regenerate')`)
		tab.do(t, chromedp.Click(chromedp.CSS(lastAssistant+` .regenerate`)))
		tab.waitJS(t, "the regenerated reply with its picker", fmt.Sprintf(`document.querySelector('%s .msg-text')?.textContent === %q &&
			document.querySelector('%s .picker-pos') && !document.getElementById('send').disabled`, lastAssistant, want, lastAssistant))
	}
	regenerate("reply 3 to again")
	regenerate("reply 4 to again")
	assert.Equal(t, "3/3", eval[string](t, tab, `document.querySelector('`+lastAssistant+` .picker-pos').textContent`))
	assert.Equal(t, "hello / reply 1 to hello / again / reply 4 to again", eval[string](t, tab, pageTexts))

	// Back to the first reply: ‹ twice.
	for _, want := range []string{"2/3", "1/3"} {
		tab.do(t, chromedp.Click(chromedp.CSS(lastAssistant+` .picker-prev`)))
		tab.waitJS(t, "the picker at "+want, `document.querySelector('`+lastAssistant+` .picker-pos')?.textContent === '`+want+`' && !document.getElementById('send').disabled`)
	}
	assert.Equal(t, "hello / reply 1 to hello / again / reply 2 to again", eval[string](t, tab, pageTexts))

	// Edit the first message: a new first message, with its own reply.
	first := `#messages > li.msg-user:first-of-type`
	tab.do(t, chromedp.Click(chromedp.CSS(first+` .edit`)))
	tab.waitJS(t, "the editor", `document.querySelector('`+first+` .edit-box')`)
	tab.do(t, chromedp.SetValue(chromedp.CSS(first+` .edit-box`), "hello, edited"), chromedp.Click(chromedp.CSS(first+` .edit-save`)))
	tab.waitJS(t, "the edited branch", `document.querySelectorAll('#messages > li').length === 2 &&
		document.querySelector('`+first+` .picker-pos')?.textContent === '2/2' && !document.getElementById('send').disabled`)
	assert.Equal(t, "hello, edited / reply 5 to hello, edited", eval[string](t, tab, pageTexts))

	// A reload finds the branch the page was on.
	tab.open(t)
	tab.waitJS(t, "the thread after the reload", `document.querySelectorAll('#messages > li').length === 2`)
	assert.Equal(t, "hello, edited / reply 5 to hello, edited", eval[string](t, tab, pageTexts))
	assert.Equal(t, "2/2", eval[string](t, tab, `document.querySelector('`+first+` .picker-pos').textContent`))

	// The first message's picker leads back to the old branch, where the
	// first reply was chosen.
	tab.do(t, chromedp.Click(chromedp.CSS(first+` .picker-prev`)))
	tab.waitJS(t, "the old branch", `document.querySelectorAll('#messages > li').length === 4 && !document.getElementById('send').disabled`)
	assert.Equal(t, "hello / reply 1 to hello / again / reply 4 to again", eval[string](t, tab, pageTexts),
		"a branch switched to shows its latest descendant")
	tab.checkQuiet(t)
}
