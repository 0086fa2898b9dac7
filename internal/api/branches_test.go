package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/processor"
	"chatd/internal/store"
)

// historyEcho answers with the texts of the history it was given and the
// user's message, so a test sees the window a turn read.
type historyEcho struct{ runs atomic.Int64 }

func (*historyEcho) Describe() string { return "replies with the history it saw" }

func (h *historyEcho) Process(ctx context.Context, in processor.Input, emit processor.Emit) (processor.Output, error) {
	msgs, err := in.History.Decode()
	if err != nil {
		return processor.Output{}, err
	}
	var seen []string
	for _, m := range msgs {
		seen = append(seen, m.Text)
	}
	n := h.runs.Add(1)
	return processor.Output{Text: fmt.Sprintf("reply %d to %s after [%s]", n, in.Message.Text, strings.Join(seen, "|"))}, nil
}

type wireBranchMessage struct {
	ID       string  `json:"id"`
	ParentID *string `json:"parent_id"`
	Role     string  `json:"role"`
	Message  string  `json:"message"`
	Siblings *struct {
		Index int      `json:"index"`
		IDs   []string `json:"ids"`
	} `json:"siblings"`
}

type wireBranchTurn struct {
	UserMessage wireBranchMessage `json:"user_message"`
	Message     wireBranchMessage `json:"message"`
}

type wireBranchPage struct {
	Messages   []wireBranchMessage `json:"messages"`
	NextBefore *string             `json:"next_before"`
}

func regeneratePath(threadID, messageID string) string {
	return "/v1/threads/" + threadID + "/messages/" + messageID + "/regenerate"
}

func (ts *testServer) branchTurn(tb testing.TB, threadID string, body map[string]any) wireBranchTurn {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodPost, path: turnPath(threadID), as: alice, body: mustJSON(tb, body)})
	mustStatus(tb, resp, http.StatusOK)
	return mustDecode[wireBranchTurn](tb, resp.Body)
}

func (ts *testServer) regenerate(tb testing.TB, threadID, messageID string) wireBranchTurn {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodPost, path: regeneratePath(threadID, messageID), as: alice})
	mustStatus(tb, resp, http.StatusOK)
	return mustDecode[wireBranchTurn](tb, resp.Body)
}

func (ts *testServer) branchPage(tb testing.TB, threadID, query string) wireBranchPage {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/v1/threads/" + threadID + "/messages?limit=200" + query, as: alice})
	mustStatus(tb, resp, http.StatusOK)
	return mustDecode[wireBranchPage](tb, resp.Body)
}

func texts(msgs []wireBranchMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Message
	}
	return out
}

func headOf(tb testing.TB, ts *testServer, threadID string) string {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/v1/threads/" + threadID, as: alice})
	mustStatus(tb, resp, http.StatusOK)
	th := mustDecode[struct {
		HeadID *string `json:"head_id"`
	}](tb, resp.Body)
	if th.HeadID == nil {
		return ""
	}
	return *th.HeadID
}

func TestRegenerateEditAndBranches(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind), withProcessor("history", &historyEcho{}))
		id := ts.mustCreateThread(t, alice, "history")
		assert.Empty(t, headOf(t, ts, id), "an empty thread has no head")

		first := ts.branchTurn(t, id, map[string]any{"message": "one"})
		assert.Nil(t, first.UserMessage.ParentID, "the first message has no parent")
		require.NotNil(t, first.Message.ParentID)
		assert.Equal(t, first.UserMessage.ID, *first.Message.ParentID)
		second := ts.branchTurn(t, id, map[string]any{"message": "two"})
		assert.Equal(t, first.Message.ID, *second.UserMessage.ParentID)

		// Regenerate twice: the same user message, new sibling replies, each the head.
		regen1 := ts.regenerate(t, id, second.Message.ID)
		assert.Equal(t, second.UserMessage, regen1.UserMessage, "the user message is the existing one")
		assert.Equal(t, "reply 3 to two after [one|reply 1 to one after []]", regen1.Message.Message,
			"the processor sees the branch before the user message")
		regen2 := ts.regenerate(t, id, regen1.Message.ID)
		assert.Equal(t, regen2.Message.ID, headOf(t, ts, id))

		page := ts.branchPage(t, id, "")
		require.Len(t, page.Messages, 4)
		last := page.Messages[3]
		assert.Equal(t, regen2.Message.ID, last.ID)
		require.NotNil(t, last.Siblings)
		assert.Equal(t, []string{second.Message.ID, regen1.Message.ID, regen2.Message.ID}, last.Siblings.IDs)
		assert.Equal(t, 2, last.Siblings.Index)
		assert.Nil(t, page.Messages[0].Siblings, "a message without alternatives carries no siblings")

		// Flip back to the first reply: PATCH head_id, and ?leaf= reads it too.
		resp := ts.do(t, testRequest{method: http.MethodPatch, path: "/v1/threads/" + id, as: alice,
			body: mustJSON(t, map[string]string{"head_id": second.Message.ID})})
		mustStatus(t, resp, http.StatusOK)
		assert.Equal(t, second.Message.ID, headOf(t, ts, id))
		page = ts.branchPage(t, id, "")
		assert.Equal(t, second.Message.ID, page.Messages[3].ID)
		assert.Equal(t, 0, page.Messages[3].Siblings.Index)
		assert.Equal(t, texts(page.Messages), texts(ts.branchPage(t, id, "&leaf="+second.Message.ID).Messages))

		// A turn from the head follows the reply the head names.
		third := ts.branchTurn(t, id, map[string]any{"message": "three"})
		assert.Equal(t, second.Message.ID, *third.UserMessage.ParentID)
		assert.Equal(t, "reply 5 to three after [one|reply 1 to one|two|reply 2 to two after [one|reply 1 to one after []]]",
			strings.ReplaceAll(third.Message.Message, " after []|", "|"))

		// Edit the first message: a sibling of it, a new first message.
		edit := ts.branchTurn(t, id, map[string]any{"message": "one, edited", "parent_id": nil})
		assert.Nil(t, edit.UserMessage.ParentID)
		assert.Equal(t, "reply 6 to one, edited after []", edit.Message.Message, "the processor sees no other branch")
		page = ts.branchPage(t, id, "")
		require.Len(t, page.Messages, 2)
		assert.Equal(t, []string{first.UserMessage.ID, edit.UserMessage.ID}, page.Messages[0].Siblings.IDs)

		// A page before a message continues its branch; the old branch stays whole.
		old := ts.branchPage(t, id, "&leaf="+third.Message.ID)
		assert.Equal(t, []string{"one", "reply 1 to one after []", "two", second.Message.Message, "three", third.Message.Message}, texts(old.Messages))
		resp = ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + id + "/messages?limit=2&leaf=" + third.Message.ID, as: alice})
		mustStatus(t, resp, http.StatusOK)
		part := mustDecode[wireBranchPage](t, resp.Body)
		require.NotNil(t, part.NextBefore)
		resp = ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + id + "/messages?limit=10&before=" + *part.NextBefore, as: alice})
		mustStatus(t, resp, http.StatusOK)
		assert.Equal(t, texts(old.Messages[:4]), texts(mustDecode[wireBranchPage](t, resp.Body).Messages))
	})
}

func TestRegenerateStreams(t *testing.T) {
	ts := newTestServer(t)
	id := ts.mustCreateThread(t, alice, "echo")
	res := ts.mustTurn(t, alice, id, "hello")
	st := ts.mustStream(t, testRequest{method: http.MethodPost, path: regeneratePath(id, res.Message.ID), as: alice,
		header: http.Header{"Accept": {"text/event-stream"}}})
	defer st.close()
	names := eventNames(eventsOnly(st.readAll()))
	assert.Equal(t, "message.start", names[0])
	assert.Equal(t, "turn.completed", names[len(names)-1])
	assert.Len(t, ts.mustHistory(t, alice, id), 2, "the head's branch: the user message and the new reply")
}

func TestRegenerateIdempotent(t *testing.T) {
	ts := newTestServer(t)
	id := ts.mustCreateThread(t, alice, "echo")
	res := ts.mustTurn(t, alice, id, "hello")
	post := func(messageID string) *testResponse {
		return ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, messageID), as: alice,
			header: http.Header{"Idempotency-Key": {"regen-1"}}})
	}
	a, b := post(res.Message.ID), post(res.Message.ID)
	mustStatus(t, a, http.StatusOK)
	assert.Equal(t, string(a.Body), string(b.Body), "a retry replays the same regenerate")
	runs := ts.echo.runs.Load()
	assert.Equal(t, int64(2), runs, "one turn and one regenerate ran")
	mustProblem(t, post(res.UserMessage.ID), http.StatusUnprocessableEntity, "idempotency_conflict")
}

func TestBranchBadInput(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		id := ts.mustCreateThread(t, alice, "echo")
		other := ts.mustCreateThread(t, alice, "echo")
		res := ts.mustTurn(t, alice, id, "hello")
		foreign := ts.mustTurn(t, alice, other, "elsewhere")
		before := ts.mustHistoryRaw(t, alice, id)
		thread := headOf(t, ts, id)

		for name, parent := range map[string]any{
			"a user message":           res.UserMessage.ID,
			"another thread's message": foreign.Message.ID,
			"no message":               "0197a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a10",
			"not an ID":                "x",
		} {
			t.Run("parent_id "+name, func(t *testing.T) {
				resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(id), as: alice,
					body: mustJSON(t, map[string]any{"message": "m", "parent_id": parent})})
				p := mustProblem(t, resp, http.StatusUnprocessableEntity, "validation_failed")
				assert.Equal(t, []string{"parent_id"}, p.fields())
			})
		}
		resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(id), as: alice, body: []byte(`{"message":"m","parent_id":7}`)})
		mustProblem(t, resp, http.StatusBadRequest, "invalid_request")

		for name, head := range map[string]string{"a message of another thread": foreign.Message.ID, "not an ID": "x"} {
			t.Run("head_id "+name, func(t *testing.T) {
				resp := ts.do(t, testRequest{method: http.MethodPatch, path: "/v1/threads/" + id, as: alice,
					body: mustJSON(t, map[string]string{"head_id": head, "title": "changed"})})
				p := mustProblem(t, resp, http.StatusUnprocessableEntity, "validation_failed")
				assert.Equal(t, []string{"head_id"}, p.fields())
			})
		}
		resp = ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + id + "/messages?leaf=" + foreign.Message.ID, as: alice})
		mustProblem(t, resp, http.StatusBadRequest, "invalid_request")

		mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, res.UserMessage.ID), as: alice}),
			http.StatusUnprocessableEntity, "not_regenerable")
		mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, foreign.Message.ID), as: alice}),
			http.StatusNotFound, "not_found")
		mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, "nope"), as: alice}),
			http.StatusNotFound, "not_found")
		mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, res.Message.ID), as: alice,
			body: []byte(`{"message":"x"}`)}), http.StatusBadRequest, "invalid_request")

		assert.Equal(t, string(before), string(ts.mustHistoryRaw(t, alice, id)), "nothing was stored")
		assert.Equal(t, thread, headOf(t, ts, id))
		assert.Nil(t, ts.mustThread(t, alice, id).Title)
	})
}

func TestRegenerateQuestions(t *testing.T) {
	ts := newTestServer(t)
	id := ts.mustCreateThread(t, alice, "echo")
	ask := `/elicit {"message":"Sure?","requestedSchema":{"type":"object","properties":{}}}`
	q := ts.mustPause(t, alice, id, ask)
	// The 409s come first, also for the question itself.
	mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, q.Message.ID), as: alice}),
		http.StatusConflict, "elicitation_pending")
	answered := ts.mustAnswer(t, alice, id, q.Elicitation.id(), map[string]any{"action": "accept", "content": map[string]any{}})
	for name, msg := range map[string]string{"the question": q.Message.ID, "the reply to an answer": answered.Message.ID} {
		t.Run(name, func(t *testing.T) {
			mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, msg), as: alice}),
				http.StatusUnprocessableEntity, "not_regenerable")
		})
	}
}

func TestRegenerateAndTurnExcludeEachOther(t *testing.T) {
	ts := newTestServer(t)
	id := ts.mustCreateThread(t, alice, "echo")
	slow := ts.mustTurn(t, alice, id, "/slow 50 a b c d e f g h i j k l m n o p q r s t")
	for name, run := range map[string]testRequest{
		"a turn while a regenerate runs": {method: http.MethodPost, path: regeneratePath(id, slow.Message.ID), as: alice},
		"a regenerate while a turn runs": {method: http.MethodPost, path: turnPath(id), as: alice,
			body: mustJSON(t, map[string]string{"message": "/slow 50 a b c d e f g h i j k l m n o p q r s t"})},
	} {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := ts.Client().Do(ts.newRequest(t, context.Background(), run))
				if assert.NoError(t, err) {
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					_ = resp.Body.Close()
				}
			}()
			waitFor(t, "the first to run", func() bool { return ts.mustThread(t, alice, id).RunningTurn != nil })
			other := testRequest{method: http.MethodPost, path: turnPath(id), as: alice, body: mustJSON(t, map[string]string{"message": "x"})}
			if run.path == turnPath(id) {
				other = testRequest{method: http.MethodPost, path: regeneratePath(id, slow.Message.ID), as: alice}
			}
			mustProblem(t, ts.do(t, other), http.StatusConflict, "thread_busy")
			// The 409s come before the message is looked at.
			mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, "nope"), as: alice}),
				http.StatusConflict, "thread_busy")
			wg.Wait()
		})
	}
}

// TestTrimmedParent: a reply trimmed from history can be neither a turn's
// parent nor regenerated, and its children's branch stops where it was.
func TestTrimmedParent(t *testing.T) {
	opts := testStoreOpts
	opts.HistoryMax = 4
	st := store.NewMemory(opts)
	t.Cleanup(func() { _ = st.Close() })
	ts := newTestServer(t, withStore(st))
	id := ts.mustCreateThread(t, alice, "echo")
	first := ts.mustTurn(t, alice, id, "one")
	ts.mustTurn(t, alice, id, "two")
	ts.mustTurn(t, alice, id, "three")
	before := ts.mustHistoryRaw(t, alice, id)

	resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(id), as: alice,
		body: mustJSON(t, map[string]any{"message": "m", "parent_id": first.Message.ID})})
	assert.Equal(t, []string{"parent_id"}, mustProblem(t, resp, http.StatusUnprocessableEntity, "validation_failed").fields())
	mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: regeneratePath(id, first.Message.ID), as: alice}),
		http.StatusNotFound, "not_found")
	assert.Equal(t, string(before), string(ts.mustHistoryRaw(t, alice, id)), "nothing was stored")
	page := mustDecode[wireBranchPage](t, before)
	require.Len(t, page.Messages, 4)
	assert.Nil(t, page.NextBefore, "the branch stops at its trimmed ancestor")
	require.NotNil(t, page.Messages[0].ParentID, "a message keeps the parent_id of a trimmed parent")
}

// TestRegenerateStopOnDisconnect: a regenerate asked to stop when its
// client goes away stops, and its reply is kept, marked stopped, beside
// the one it regenerated.
func TestRegenerateStopOnDisconnect(t *testing.T) {
	ts := newTestServer(t)
	id := ts.mustCreateThread(t, alice, "echo")
	// Long enough to disconnect from, short enough to run to its end once.
	first := ts.mustTurn(t, alice, id, "/slow 25 "+strings.Repeat("word ", 40))
	stream := ts.mustStream(t, testRequest{method: http.MethodPost, path: regeneratePath(id, first.Message.ID), as: alice,
		body: mustJSON(t, map[string]any{"stop_on_disconnect": true})})
	require.Equal(t, "message.start", stream.nextEvent().event)
	require.Equal(t, "text.delta", stream.nextEvent().event)
	stream.close()
	waitFor(t, "the regenerate to stop", func() bool { return headOf(t, ts, id) != first.Message.ID })
	history := ts.mustHistory(t, alice, id)
	require.Len(t, history, 2)
	assert.Equal(t, true, history[1].Meta[blocks.MetaStopped])
	page := ts.branchPage(t, id, "")
	assert.Equal(t, []string{first.Message.ID, history[1].ID}, page.Messages[1].Siblings.IDs)
}
