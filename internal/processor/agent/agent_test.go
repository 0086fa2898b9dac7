package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/processor/agent"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

func TestPlainStreamedAnswer(t *testing.T) {
	m := newFakeModel(t, textReply("Hello", ", world", "!"))
	cfg := agentConfig(m)
	cfg.SystemPrompt = "You are terse."
	cfg.APIKey = "sk-test"
	c := newMemoryChatd(t, mustAgent(t, cfg))
	thread := c.mustThread(t)

	events := c.stream(t, context.Background(), thread, "Hi there").all(t)
	var names, deltas []string
	for _, ev := range events {
		names = append(names, ev.name)
		if ev.name == "text.delta" {
			var d struct{ Delta string }
			require.NoError(t, json.Unmarshal(ev.data, &d))
			deltas = append(deltas, d.Delta)
		}
	}
	assert.Equal(t, []string{"message.start", "text.delta", "text.delta", "text.delta", "turn.completed"}, names)
	assert.Equal(t, []string{"Hello", ", world", "!"}, deltas, "each model chunk is streamed as it arrives")
	var done turnResult
	require.NoError(t, json.Unmarshal(events[len(events)-1].data, &done))
	assert.Equal(t, "completed", done.Status)
	assert.Equal(t, "Hello, world!", done.Message.Text)
	assert.Empty(t, done.Message.Meta, "no tools ran")

	sent := m.sent()
	require.Len(t, sent, 1)
	assert.Equal(t, "test-model", sent[0].Model)
	assert.True(t, sent[0].Stream)
	assert.Equal(t, "Bearer sk-test", sent[0].Authorization)
	assert.Equal(t, []map[string]any{
		{"role": "system", "content": "You are terse."},
		{"role": "user", "content": "Hi there"},
	}, sent[0].Messages)
	require.Len(t, sent[0].Tools, 1)
	assert.Equal(t, "ask_user", sent[0].Tools[0].Function.Name)
}

func TestNoAPIKeySendsNoAuthorization(t *testing.T) {
	m := newFakeModel(t, textReply("ok"))
	cfg := agentConfig(m)
	cfg.AskUser = false
	c := newMemoryChatd(t, mustAgent(t, cfg))
	c.mustTurn(t, c.mustThread(t), "hi")
	sent := m.sent()
	require.Len(t, sent, 1)
	assert.Empty(t, sent[0].Authorization, "a local model gets no credentials")
	assert.Empty(t, sent[0].Tools, "no tools are offered when there are none")
}

// lookupTool is a tool written in Go: it returns a text block, a link and
// structured content.
type lookupTool struct {
	calls atomic.Int64
	args  atomic.Value
}

func (l *lookupTool) Definition() agent.ToolDefinition {
	return agent.ToolDefinition{
		Name:        "lookup",
		Description: "Look up an article.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
	}
}

func (l *lookupTool) Call(_ context.Context, call agent.ToolCall) (agent.ToolResult, error) {
	l.calls.Add(1)
	l.args.Store(string(call.Arguments))
	link := blocks.MustBlock(blocks.ResourceLink("https://example.com/a/1", "article-1", blocks.LinkOptions{Title: "Article 1"}))
	return agent.ToolResult{
		Content:           []blocks.ContentBlock{blocks.Text("One article found."), link},
		StructuredContent: json.RawMessage(`{"count":1,"score":0.50}`),
	}, nil
}

// deleteTool deletes things: the user is asked first.
type deleteTool struct{ calls atomic.Int64 }

func (d *deleteTool) Definition() agent.ToolDefinition {
	return agent.ToolDefinition{Name: "files__delete", Description: "Delete a file.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
}

func (d *deleteTool) Call(context.Context, agent.ToolCall) (agent.ToolResult, error) {
	d.calls.Add(1)
	return agent.ToolResult{Content: []blocks.ContentBlock{blocks.Text("deleted")}}, nil
}

func TestToolCallAndResult(t *testing.T) {
	m := newFakeModel(t,
		toolReply("Let me look.", call{"call_1", "lookup", `{"query":"chatd"}`}),
		textReply("Found one article."))
	tool := &lookupTool{}
	cfg := agentConfig(m)
	cfg.Tools = []agent.ToolSource{agent.Tools{tool}}
	c := newMemoryChatd(t, mustAgent(t, cfg))
	thread := c.mustThread(t)

	events := c.stream(t, context.Background(), thread, "find chatd").all(t)
	var statuses []string
	var text strings.Builder
	for _, ev := range events {
		if ev.name != "text.delta" {
			continue
		}
		var d struct {
			Delta string         `json:"delta"`
			Meta  map[string]any `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(ev.data, &d))
		text.WriteString(d.Delta)
		if item, ok := d.Meta["drupal.org/ai.status_item"].(map[string]any); ok {
			assert.Equal(t, "call_1", item["id"])
			statuses = append(statuses, item["state"].(string))
		}
	}
	assert.Equal(t, []string{"running", "done"}, statuses, "a status item while the tool runs")
	var done turnResult
	require.NoError(t, json.Unmarshal(events[len(events)-1].data, &done))
	assert.Equal(t, "Let me look.\n\nFound one article.", done.Message.Text)
	assert.Equal(t, done.Message.Text, text.String(), "the deltas add up to the text")
	assert.EqualValues(t, 1, tool.calls.Load())
	assert.JSONEq(t, `{"query":"chatd"}`, tool.args.Load().(string))

	require.Len(t, done.Message.ContentBlocks, 2, "the tool's blocks are in the reply")
	assert.JSONEq(t, `{"type":"text","text":"One article found."}`, string(done.Message.ContentBlocks[0]))
	assert.JSONEq(t, `{"type":"resource_link","uri":"https://example.com/a/1","name":"article-1","title":"Article 1"}`,
		string(done.Message.ContentBlocks[1]))
	assert.Equal(t, []map[string]any{{"id": "call_1", "name": "lookup", "arguments": map[string]any{"query": "chatd"}, "status": "done"}},
		done.toolCalls())
	assert.Equal(t, map[string]any{"count": 1.0, "score": 0.5}, done.Message.Meta["drupal.org/ai.structured_content"])

	sent := m.sent()
	require.Len(t, sent, 2)
	msgs := sent[1].Messages
	require.Len(t, msgs, 3)
	assert.Equal(t, "assistant", msgs[1]["role"])
	assert.Equal(t, "Let me look.", msgs[1]["content"])
	assert.Equal(t, []any{map[string]any{"id": "call_1", "type": "function",
		"function": map[string]any{"name": "lookup", "arguments": `{"query":"chatd"}`}}}, msgs[1]["tool_calls"])
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_1",
		"content": "One article found.\n[link: Article 1 <https://example.com/a/1>]"}, msgs[2],
		"the model gets the tool's blocks as text")
}

func TestUnknownToolAndBadArgumentsGoBackToTheModel(t *testing.T) {
	m := newFakeModel(t,
		toolReply("", call{"c1", "nope", `{}`}, call{"c2", "lookup", `{"query":`}),
		textReply("Sorry."))
	cfg := agentConfig(m)
	tool := &lookupTool{}
	cfg.Tools = []agent.ToolSource{agent.Tools{tool}}
	c := newMemoryChatd(t, mustAgent(t, cfg))
	r := c.mustTurn(t, c.mustThread(t), "go")
	assert.Equal(t, "Sorry.", r.Message.Text)
	assert.Zero(t, tool.calls.Load())
	calls := r.toolCalls()
	require.Len(t, calls, 2)
	assert.Equal(t, "failed", calls[0]["status"])
	assert.Equal(t, "failed", calls[1]["status"])
	msgs := m.sent()[1].Messages
	assert.Contains(t, msgs[2]["content"], `no tool named "nope"`)
	assert.Contains(t, msgs[3]["content"], "not a JSON object")
}

const validAskUser = `{"message":"Which size?","requestedSchema":{"type":"object","properties":{"size":{"type":"string","enum":["S","M","L"]}},"required":["size"]}}`

func TestAskUserPauseResumesOnAnotherInstance(t *testing.T) {
	srv := redistest.Start(t)
	m := newFakeModel(t,
		toolReply("I need one detail.", call{"call_ask", "ask_user", validAskUser}),
		textReply("Ordering size M."))
	// Two instances, each with its own store client and its own agent: the
	// answer reaches a processor that never saw the question.
	first := newChatd(t, openRedisStore(t, srv), mustAgent(t, agentConfig(m)), turn.DefaultConfig)
	second := newChatd(t, openRedisStore(t, srv), mustAgent(t, agentConfig(m)), turn.DefaultConfig)
	thread := first.mustThread(t)

	paused := first.mustTurn(t, thread, "Order a shirt")
	require.Equal(t, "input_required", paused.Status)
	require.NotNil(t, paused.Elicitation)
	assert.Equal(t, "Which size?", paused.Elicitation.Message)
	assert.Equal(t, "I need one detail.\n\nWhich size?", paused.Message.Text, "the paused message restates the question")
	assert.Equal(t, "input_required", paused.toolCalls()[0]["status"])

	done := second.mustAnswer(t, thread, paused.elicitationID(),
		map[string]any{"action": "accept", "content": map[string]any{"size": "M"}})
	assert.Equal(t, "completed", done.Status)
	assert.Equal(t, "Ordering size M.", done.Message.Text)
	assert.Equal(t, []map[string]any{{"id": "call_ask", "name": "ask_user", "status": "done",
		"arguments": map[string]any{"message": "Which size?", "requestedSchema": map[string]any{"type": "object",
			"properties": map[string]any{"size": map[string]any{"type": "string", "enum": []any{"S", "M", "L"}}},
			"required":   []any{"size"}}}}}, done.toolCalls())

	sent := m.sent()
	require.Len(t, sent, 2)
	msgs := sent[1].Messages
	require.Len(t, msgs, 3, "the exchange from the pause state, not history's copy of it: %v", msgs)
	assert.Equal(t, map[string]any{"role": "user", "content": "Order a shirt"}, msgs[0])
	assert.Equal(t, "I need one detail.", msgs[1]["content"])
	assert.Equal(t, "tool", msgs[2]["role"])
	assert.Equal(t, "call_ask", msgs[2]["tool_call_id"])
	assert.JSONEq(t, `{"action":"accept","content":{"size":"M"}}`, msgs[2]["content"].(string), "the model gets the answer")

	// The next turn's history holds the whole exchange as text.
	m.add(textReply("You're welcome."))
	first.mustTurn(t, thread, "thanks")
	msgs = m.sent()[2].Messages
	var contents []string
	for _, msg := range msgs {
		contents = append(contents, msg["role"].(string)+": "+msg["content"].(string))
	}
	assert.Equal(t, []string{
		"user: Order a shirt",
		"assistant: I need one detail.\n\nWhich size?",
		"user: (answer to the form) Accepted — size: M",
		"assistant: Ordering size M.",
		"user: thanks",
	}, contents)
}

func TestInvalidAskUserIsCorrected(t *testing.T) {
	bad := `{"message":"Where?","requestedSchema":{"type":"object","properties":{"address":{"type":"object","properties":{}}}}}`
	m := newFakeModel(t,
		toolReply("", call{"c1", "ask_user", bad}),
		toolReply("", call{"c2", "ask_user", validAskUser}))
	c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
	r := c.mustTurn(t, c.mustThread(t), "ship it")
	require.Equal(t, "input_required", r.Status, "the corrected request pauses the turn")
	assert.Equal(t, "Which size?", r.Elicitation.Message)
	calls := r.toolCalls()
	require.Len(t, calls, 2)
	assert.Equal(t, "failed", calls[0]["status"])
	assert.Equal(t, "input_required", calls[1]["status"])

	sent := m.sent()
	require.Len(t, sent, 2)
	toolMsg := sent[1].Messages[2]
	assert.Equal(t, "c1", toolMsg["tool_call_id"])
	content := toolMsg["content"].(string)
	assert.Contains(t, content, "invalid ask_user request")
	assert.Contains(t, content, `"field":"requestedSchema.properties.address`, "chatd's field errors: %s", content)
}

func TestConfirm(t *testing.T) {
	deleteCall := call{"call_del", "files__delete", `{"path":"/tmp/x"}`}
	newAgent := func(t *testing.T, m *fakeModel) (*chatd, *deleteTool) {
		tool := &deleteTool{}
		cfg := agentConfig(m)
		cfg.Confirm = []string{"files__*"}
		cfg.Tools = []agent.ToolSource{agent.Tools{tool}}
		return newMemoryChatd(t, mustAgent(t, cfg)), tool
	}
	pause := func(t *testing.T, c *chatd, thread string) turnResult {
		r := c.mustTurn(t, thread, "delete /tmp/x")
		require.Equal(t, "input_required", r.Status)
		assert.Equal(t, `Allow the assistant to run files__delete with {"path":"/tmp/x"}?`, r.Elicitation.Message)
		assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{}}, r.Elicitation.RequestedSchema,
			"a confirm: an empty form")
		return r
	}

	t.Run("declined", func(t *testing.T) {
		m := newFakeModel(t, toolReply("", deleteCall), textReply("OK, I left it."))
		c, tool := newAgent(t, m)
		thread := c.mustThread(t)
		r := pause(t, c, thread)
		done := c.mustAnswer(t, thread, r.elicitationID(), map[string]string{"action": "decline"})
		assert.Equal(t, "OK, I left it.", done.Message.Text)
		assert.Zero(t, tool.calls.Load(), "a declined tool does not run")
		assert.Equal(t, "declined", done.toolCalls()[0]["status"])
		msgs := m.sent()[1].Messages
		assert.Equal(t, "The user declined: the tool was not run.", msgs[len(msgs)-1]["content"])
	})
	t.Run("accepted", func(t *testing.T) {
		m := newFakeModel(t, toolReply("", deleteCall), textReply("Deleted."))
		c, tool := newAgent(t, m)
		thread := c.mustThread(t)
		r := pause(t, c, thread)
		done := c.mustAnswer(t, thread, r.elicitationID(), map[string]string{"action": "accept"})
		assert.Equal(t, "Deleted.", done.Message.Text)
		assert.EqualValues(t, 1, tool.calls.Load())
		assert.Equal(t, "done", done.toolCalls()[0]["status"])
		msgs := m.sent()[1].Messages
		assert.Equal(t, "deleted", msgs[len(msgs)-1]["content"])
	})
	t.Run("cancelled", func(t *testing.T) {
		m := newFakeModel(t, toolReply("", deleteCall))
		c, tool := newAgent(t, m)
		thread := c.mustThread(t)
		r := pause(t, c, thread)
		done := c.mustAnswer(t, thread, r.elicitationID(), map[string]string{"action": "cancel"})
		assert.Equal(t, "completed", done.Status)
		assert.Equal(t, "Cancelled: files__delete was not run.", done.Message.Text)
		assert.Zero(t, tool.calls.Load())
		assert.Equal(t, "cancelled", done.toolCalls()[0]["status"])
		assert.Len(t, m.sent(), 1, "no further model call after a cancel")
	})
	t.Run("no_confirm wins", func(t *testing.T) {
		m := newFakeModel(t, toolReply("", deleteCall), textReply("Deleted."))
		tool := &deleteTool{}
		cfg := agentConfig(m)
		cfg.Confirm = []string{"files__*"}
		cfg.NoConfirm = []string{"*__delete"}
		cfg.Tools = []agent.ToolSource{agent.Tools{tool}}
		c := newMemoryChatd(t, mustAgent(t, cfg))
		r := c.mustTurn(t, c.mustThread(t), "delete /tmp/x")
		assert.Equal(t, "completed", r.Status)
		assert.EqualValues(t, 1, tool.calls.Load())
	})
}

func TestMaxSteps(t *testing.T) {
	m := newFakeModel(t)
	loop := toolReply("", call{"c", "lookup", `{"query":"again"}`})
	m.fallback = &loop
	tool := &lookupTool{}
	cfg := agentConfig(m)
	cfg.MaxSteps = 3
	cfg.Tools = []agent.ToolSource{agent.Tools{tool}}
	c := newMemoryChatd(t, mustAgent(t, cfg))
	r := c.mustTurn(t, c.mustThread(t), "loop forever")
	assert.Equal(t, "completed", r.Status)
	assert.Len(t, m.sent(), 3, "at most max_steps model calls")
	assert.EqualValues(t, 2, tool.calls.Load(), "the last reply's calls are not run: no call could read their results")
	assert.Contains(t, r.Message.Text, "limit of 3 steps")
	var statuses []string
	for _, c := range r.toolCalls() {
		statuses = append(statuses, c["status"].(string))
	}
	assert.Equal(t, []string{"done", "done", "skipped"}, statuses)
}

func TestRetriesThenSucceeds(t *testing.T) {
	m := newFakeModel(t,
		reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After-Ms": "5"}},
		reply{status: http.StatusServiceUnavailable, header: map[string]string{"Retry-After-Ms": "5"}},
		textReply("third time lucky"))
	c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
	r := c.mustTurn(t, c.mustThread(t), "hi")
	assert.Equal(t, "third time lucky", r.Message.Text)
	assert.Len(t, m.sent(), 3)
}

func TestModelErrorsNameTheStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		attempts int
		detail   string
	}{
		{"rate limited throughout", http.StatusTooManyRequests, 3, "the model answered 429 Too Many Requests (3 attempts)"},
		{"server error throughout", http.StatusBadGateway, 3, "the model answered 502 Bad Gateway (3 attempts)"},
		{"bad key, not retried", http.StatusUnauthorized, 1, "the model answered 401 Unauthorized"},
		{"unknown model, not retried", http.StatusNotFound, 1, "the model answered 404 Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeModel(t)
			m.fallback = &reply{status: tc.status, header: map[string]string{"Retry-After-Ms": "1"}}
			c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
			thread := c.mustThread(t)
			status, body := c.turn(t, thread, "hi")
			require.Equal(t, http.StatusBadGateway, status)
			p := mustProblem(t, body)
			assert.Equal(t, "processor_failed", p.Code)
			assert.Equal(t, tc.detail, p.Detail)
			assert.NotContains(t, p.Detail, m.URL, "the model's address is not shown")
			assert.Len(t, m.sent(), tc.attempts)

			// Nothing of the failed turn is in history.
			status, body = c.do(t, http.MethodGet, "/v1/threads/"+thread+"/messages", nil)
			require.Equal(t, http.StatusOK, status)
			assert.JSONEq(t, `{"messages":[],"next_before":null}`, string(body))
		})
	}
}

func TestUnreachableModel(t *testing.T) {
	m := newFakeModel(t)
	cfg := agentConfig(m)
	m.Close() // nothing listens there any more
	c := newMemoryChatd(t, mustAgent(t, cfg))
	status, body := c.turn(t, c.mustThread(t), "hi")
	require.Equal(t, http.StatusBadGateway, status)
	assert.Equal(t, "the model could not be reached or its stream broke", mustProblem(t, body).Detail)
}

func TestMalformedChunk(t *testing.T) {
	t.Run("json", func(t *testing.T) {
		m := newFakeModel(t, reply{chunks: []string{`{"id":"x","choices":[{"index":0,"delta":{"content":"par`}})
		c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
		status, body := c.turn(t, c.mustThread(t), "hi")
		require.Equal(t, http.StatusBadGateway, status)
		assert.Equal(t, "the model sent a malformed stream", mustProblem(t, body).Detail)
		assert.Len(t, m.sent(), 1, "a broken stream is not retried: its text may already be out")
	})
	t.Run("mid-stream, streamed turn", func(t *testing.T) {
		good := textReply("Hello")
		m := newFakeModel(t, reply{chunks: append(good.chunks[:2:2], `not json at all`)})
		c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
		thread := c.mustThread(t)
		events := c.stream(t, context.Background(), thread, "hi").all(t)
		var names []string
		for _, ev := range events {
			names = append(names, ev.name)
		}
		assert.Equal(t, []string{"message.start", "text.delta", "error"}, names)
		p := mustProblem(t, events[len(events)-1].data)
		assert.Equal(t, "processor_failed", p.Code)
		assert.Equal(t, "the model sent a malformed stream", p.Detail)
	})
	t.Run("connection closed mid-stream", func(t *testing.T) {
		good := textReply("Hello")
		m := newFakeModel(t, reply{chunks: good.chunks[:2], noDone: true})
		c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
		status, body := c.turn(t, c.mustThread(t), "hi")
		require.Equal(t, http.StatusBadGateway, status)
		assert.Equal(t, "the model's stream ended before its answer was complete", mustProblem(t, body).Detail)
	})
}

func TestTimeoutCancelsTheModelCall(t *testing.T) {
	m := newFakeModel(t)
	closed := make(chan struct{})
	hang := textReply("Hel")
	hang.chunks = hang.chunks[:2]
	hang.hang = true
	m.fallback = &hang
	handler := m.Config.Handler
	m.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			close(closed)
		}
	})
	st := store.NewMemory(testStoreOpts)
	t.Cleanup(func() { _ = st.Close() })
	cfg := turn.DefaultConfig
	cfg.TurnTimeout = 500 * time.Millisecond
	c := newChatd(t, st, mustAgent(t, agentConfig(m)), cfg)
	status, body := c.turn(t, c.mustThread(t), "hi")
	require.Equal(t, http.StatusBadGateway, status)
	assert.Equal(t, "the processor did not answer within the turn timeout", mustProblem(t, body).Detail)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the model's request was not cancelled")
	}
}

func TestHistoryBecomesModelMessages(t *testing.T) {
	m := newFakeModel(t, textReply("ok"))
	cfg := agentConfig(m)
	cfg.HistoryWindow = 3
	a := mustAgent(t, cfg)
	assert.Equal(t, 3, a.HistoryWindow())

	card := blocks.MustBlock(blocks.EntityCard("node", "42", "3f2c8a4e-7b1d-4c6e-9a0f-5d8e2b7c1a94", ""))
	img := blocks.MustBlock(blocks.Image("aGk=", "image/png"))
	history := []blocks.Message{
		blocks.NewMessage(blocks.RoleUser, "look at this", []blocks.ContentBlock{img}, nil),
		blocks.NewMessage(blocks.RoleAssistant, "Here it is.", []blocks.ContentBlock{card}, nil),
		blocks.NewMessage(blocks.RoleUser, "", []blocks.ContentBlock{blocks.Text("only a block")}, nil),
	}
	var encoded blocks.EncodedMessages
	for _, msg := range history {
		data, err := json.Marshal(msg)
		require.NoError(t, err)
		encoded = append(encoded, data)
	}
	msg := blocks.NewMessage(blocks.RoleUser, "and now?", nil, nil)
	out, err := a.Process(context.Background(), processor.Input{History: encoded, Message: &msg}, func(processor.Delta) {})
	require.NoError(t, err)
	assert.Equal(t, "ok", out.Text)
	assert.Equal(t, []map[string]any{
		{"role": "user", "content": "look at this\n[image: image/png]"},
		{"role": "assistant", "content": "Here it is.\n[entity card: node/42 node/42 <entity:node/42>]"},
		{"role": "user", "content": "only a block"},
		{"role": "user", "content": "and now?"},
	}, m.sent()[0].Messages)
}

func TestBadPauseStateFailsTheTurn(t *testing.T) {
	m := newFakeModel(t)
	a := mustAgent(t, agentConfig(m))
	_, err := a.Process(context.Background(), processor.Input{Resume: &processor.Resume{State: []byte(`{"v":99}`)}},
		func(processor.Delta) {})
	var perr *processor.Error
	require.True(t, errors.As(err, &perr), "%v", err)
	assert.Contains(t, perr.Detail, "could not read the state")
}

func TestNewChecksConfig(t *testing.T) {
	_, err := agent.New(agent.Config{BaseURL: "127.0.0.1:11434", MaxSteps: 0, HistoryWindow: -1, Confirm: []string{"["}})
	require.Error(t, err)
	for _, want := range []string{"base_url", "model", "max_steps", "history_window", `tool glob "["`} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestNewRefusesH2COverHTTPS(t *testing.T) {
	cfg := agent.Config{BaseURL: "https://api.example.com/v1", Model: "m", MaxSteps: 1, H2C: true}
	_, err := agent.New(cfg)
	require.ErrorContains(t, err, "h2c: only for an http:// base_url")
	cfg.BaseURL = "http://127.0.0.1:8000/v1"
	_, err = agent.New(cfg)
	assert.NoError(t, err)
}

// bookingTool needs the user's answer before it can finish, as an MCP tool
// that raises an elicitation does: it pauses with a form and saved state,
// and finishes when called again with the answer.
type bookingTool struct {
	resumes chan agent.ToolResume
}

func (b *bookingTool) Definition() agent.ToolDefinition {
	return agent.ToolDefinition{Name: "rooms__book", Description: "Book a room."}
}

func (b *bookingTool) Call(_ context.Context, call agent.ToolCall) (agent.ToolResult, error) {
	if call.Resume == nil {
		req, err := elicit.NewRequest("Which room?", json.RawMessage(
			`{"type":"object","properties":{"room":{"type":"string","enum":["Aurora","Cosmos"]}},"required":["room"]}`), nil)
		if err != nil {
			return agent.ToolResult{}, err
		}
		return agent.ToolResult{Pause: &agent.ToolPause{Request: req, State: json.RawMessage(`{"booking":7}`)}}, nil
	}
	b.resumes <- *call.Resume
	room, _ := call.Resume.Result.Content["room"].(string)
	return agent.ToolResult{Content: []blocks.ContentBlock{blocks.Text("Booked " + room)}}, nil
}

func TestToolPausesForAnAnswer(t *testing.T) {
	m := newFakeModel(t,
		toolReply("", call{"c1", "rooms__book", `{}`}, call{"c2", "lookup", `{"query":"rooms"}`}),
		textReply("Booked Cosmos for you."))
	booking := &bookingTool{resumes: make(chan agent.ToolResume, 1)}
	lookup := &lookupTool{}
	cfg := agentConfig(m)
	cfg.Tools = []agent.ToolSource{agent.Tools{booking}, agent.Tools{lookup}}
	c := newMemoryChatd(t, mustAgent(t, cfg))
	thread := c.mustThread(t)

	paused := c.mustTurn(t, thread, "book a room")
	require.Equal(t, "input_required", paused.Status)
	assert.Equal(t, "Which room?", paused.Elicitation.Message)
	assert.Zero(t, lookup.calls.Load(), "calls after the paused one wait for the answer")

	done := c.mustAnswer(t, thread, paused.elicitationID(), map[string]any{"action": "accept", "content": map[string]any{"room": "Cosmos"}})
	assert.Equal(t, "Booked Cosmos for you.", done.Message.Text)
	resume := <-booking.resumes
	assert.JSONEq(t, `{"booking":7}`, string(resume.State), "the tool gets its own state back")
	assert.Equal(t, "Which room?", resume.Request.Message)
	assert.EqualValues(t, 1, lookup.calls.Load(), "the queued call runs after the resumed one")
	var statuses []string
	for _, c := range done.toolCalls() {
		statuses = append(statuses, c["name"].(string)+":"+c["status"].(string))
	}
	assert.Equal(t, []string{"rooms__book:done", "lookup:done"}, statuses)
	msgs := m.sent()[1].Messages
	assert.Equal(t, "Booked Cosmos", msgs[2]["content"])
	assert.Equal(t, "c2", msgs[3]["tool_call_id"])
}

// TestConcurrentTurns runs turns on many threads at once through one agent,
// whose history cache they share (run under -race by make test).
func TestConcurrentTurns(t *testing.T) {
	m := newFakeModel(t)
	answer := textReply("ok")
	m.fallback = &answer
	c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
	const threads, turns = 6, 4
	ids := make([]string, threads)
	for i := range ids {
		ids[i] = c.mustThread(t)
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range turns {
				status, body := c.turn(t, id, fmt.Sprintf("message %d", i))
				assert.Equal(t, http.StatusOK, status, "%s", body)
			}
		}()
	}
	wg.Wait()
	sent := m.sent()
	require.Len(t, sent, threads*turns)
	longest := 0
	for _, req := range sent {
		longest = max(longest, len(req.Messages))
		last := req.Messages[len(req.Messages)-1]["content"].(string)
		assert.True(t, strings.HasPrefix(last, "message "), last)
	}
	assert.Equal(t, 2*(turns-1)+1, longest, "the last turn of a thread sees its whole history")
}
