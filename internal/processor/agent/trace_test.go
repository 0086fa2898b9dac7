package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"chatd/internal/processor/agent"
	"chatd/internal/redistest"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// newTestTracing makes the process's tracer provider, which the tests'
// servers trace with, record every span until the test ends. Tests using
// it do not run in parallel: the provider is the process's.
func newTestTracing(tb testing.TB) *tracetest.SpanRecorder {
	tb.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	tb.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return rec
}

// usageChunk is the last chunk of a stream that reports usage.
func usageChunk(input, output int) string {
	data, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
	})
	return string(data)
}

func withUsage(r reply, input, output int) reply {
	r.chunks = append(r.chunks, usageChunk(input, output))
	return r
}

// spanNode is a span and its children, for comparing trees.
type spanNode struct {
	name     string
	children []spanNode
}

func spanTree(spans []sdktrace.ReadOnlySpan, parent string, keep func(sdktrace.ReadOnlySpan) bool) []spanNode {
	var out []spanNode
	for _, s := range spans {
		if s.Parent().SpanID().String() != parent || !keep(s) {
			continue
		}
		out = append(out, spanNode{name: s.Name(), children: spanTree(spans, s.SpanContext().SpanID().String(), keep)})
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func findSpans(spans []sdktrace.ReadOnlySpan, prefix string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), prefix) {
			out = append(out, s)
		}
	}
	return out
}

func TestTraceOfAStreamedToolTurn(t *testing.T) {
	rec := newTestTracing(t)
	m := newFakeModel(t,
		withUsage(toolReply("Let me look.", call{"call_1", "lookup", `{"query":"chatd"}`}), 100, 20),
		withUsage(textReply("Found one article."), 150, 30))
	cfg := agentConfig(m)
	cfg.Tools = []agent.ToolSource{agent.Tools{&lookupTool{}}}
	opts := testStoreOpts
	opts.Trace = true
	st, err := store.OpenRedis(redistest.Start(t).URL(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	c := newChatd(t, st, mustAgent(t, cfg), turn.DefaultConfig)
	thread := c.mustThread(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.stream(t, ctx, thread, "find chatd").all(t)
	require.Equal(t, "turn.completed", events[len(events)-1].name)

	spans := rec.Ended()
	var turnPost sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "POST /v1/threads/{thread_id}/turns" {
			turnPost = s
		}
	}
	require.NotNil(t, turnPost, "the turn request's span")
	assert.Equal(t, "/v1/threads/{thread_id}/turns", attrs(turnPost)["http.route"].AsString())
	assert.Equal(t, int64(200), attrs(turnPost)["http.response.status_code"].AsInt64())

	// The tree below the request, store spans folded to one kind.
	notStore := func(s sdktrace.ReadOnlySpan) bool { return attrs(s)["db.system.name"].AsString() != "redis" }
	want := []spanNode{{name: "chatd.turn", children: []spanNode{
		{name: "chat test-model"}, {name: "execute_tool lookup"}, {name: "chat test-model"},
	}}}
	assert.Equal(t, want, spanTree(spans, turnPost.SpanContext().SpanID().String(), notStore))

	turnSpans := findSpans(spans, "chatd.turn")
	require.Len(t, turnSpans, 1)
	ta := attrs(turnSpans[0])
	assert.Equal(t, thread, ta["chatd.thread_id"].AsString())
	assert.NotEmpty(t, ta["chatd.turn_id"].AsString())
	assert.Equal(t, "agent", ta["chatd.processor"].AsString())
	assert.Equal(t, "completed", ta["chatd.turn.status"].AsString())

	// Store round trips: some while the turn began (under the request),
	// the commit under the turn.
	var underRequest, underTurn int
	for _, s := range spans {
		if notStore(s) {
			continue
		}
		switch s.Parent().SpanID() {
		case turnPost.SpanContext().SpanID():
			underRequest++
		case turnSpans[0].SpanContext().SpanID():
			underTurn++
		}
	}
	assert.Positive(t, underRequest, "store spans of the turn's start")
	assert.Positive(t, underTurn, "store spans of the turn's commit")

	model := findSpans(spans, "chat ")
	require.Len(t, model, 2)
	wantModel := []map[attribute.Key]attribute.Value{{
		"gen_ai.operation.name": attribute.StringValue("chat"), "gen_ai.provider.name": attribute.StringValue("openai"),
		"gen_ai.request.model": attribute.StringValue("test-model"), "gen_ai.usage.input_tokens": attribute.Int64Value(100),
		"gen_ai.usage.output_tokens": attribute.Int64Value(20), "gen_ai.response.finish_reasons": attribute.StringSliceValue([]string{"tool_calls"}),
	}, {
		"gen_ai.operation.name": attribute.StringValue("chat"), "gen_ai.provider.name": attribute.StringValue("openai"),
		"gen_ai.request.model": attribute.StringValue("test-model"), "gen_ai.usage.input_tokens": attribute.Int64Value(150),
		"gen_ai.usage.output_tokens": attribute.Int64Value(30), "gen_ai.response.finish_reasons": attribute.StringSliceValue([]string{"stop"}),
	}}
	for i, s := range model {
		assert.Equal(t, wantModel[i], attrs(s), "model call %d", i+1)
	}
	tool := findSpans(spans, "execute_tool")
	require.Len(t, tool, 1)
	assert.Equal(t, map[attribute.Key]attribute.Value{
		"gen_ai.operation.name": attribute.StringValue("execute_tool"), "gen_ai.tool.name": attribute.StringValue("lookup"),
		"gen_ai.tool.call.id": attribute.StringValue("call_1"),
	}, attrs(tool[0]))

	// The model was sent each call's own trace context, and asked for usage.
	for i, req := range m.sent() {
		assert.True(t, req.StreamOptions.IncludeUsage, "request %d asks for usage", i+1)
		assert.Equal(t, "00-"+model[i].SpanContext().TraceID().String()+"-"+model[i].SpanContext().SpanID().String()+"-01",
			req.Traceparent, "request %d", i+1)
	}
}

func TestTraceContinuesTheCallersTrace(t *testing.T) {
	rec := newTestTracing(t)
	m := newFakeModel(t, textReply("Hi."))
	c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
	thread := c.mustThread(t)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, err := http.NewRequest(http.MethodPost, c.URL+"/v1/threads/"+thread+"/turns", strings.NewReader(`{"message":"hi"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := c.Client().Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var names []string
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() == traceID {
			names = append(names, s.Name())
		}
	}
	assert.ElementsMatch(t, []string{"POST /v1/threads/{thread_id}/turns", "chatd.turn", "chat test-model"}, names)
	assert.True(t, strings.HasPrefix(m.sent()[0].Traceparent, "00-"+traceID+"-"), m.sent()[0].Traceparent)
}

func TestUsageSummedOverModelCalls(t *testing.T) {
	m := newFakeModel(t,
		withUsage(toolReply("", call{"call_1", "lookup", `{"query":"chatd"}`}), 100, 20),
		withUsage(textReply("Found one article."), 150, 30))
	cfg := agentConfig(m)
	cfg.Tools = []agent.ToolSource{agent.Tools{&lookupTool{}}}
	c := newMemoryChatd(t, mustAgent(t, cfg))
	r := c.mustTurn(t, c.mustThread(t), "find chatd")

	assert.Equal(t, "completed", r.Status)
	assert.Equal(t, map[string]any{"model": "test-model", "input_tokens": 250.0, "output_tokens": 50.0},
		r.Message.Meta["drupal.org/ai.usage"])
	_, body := c.do(t, http.MethodGet, "/metrics", nil)
	assert.Contains(t, string(body), `chatd_model_tokens_total{kind="input",model="test-model",processor="agent"} 250`)
	assert.Contains(t, string(body), `chatd_model_tokens_total{kind="output",model="test-model",processor="agent"} 50`)
}

func TestNoUsageWithoutAReport(t *testing.T) {
	m := newFakeModel(t, textReply("Hi."))
	c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
	r := c.mustTurn(t, c.mustThread(t), "hi")
	assert.NotContains(t, r.Message.Meta, "drupal.org/ai.usage")
}

func TestTokenCapStopsTheTurn(t *testing.T) {
	m := newFakeModel(t,
		withUsage(toolReply("Let me look.", call{"call_1", "lookup", `{"query":"chatd"}`}), 900, 200),
		withUsage(textReply("never asked"), 1, 1))
	tool := &lookupTool{}
	cfg := agentConfig(m)
	cfg.Tools = []agent.ToolSource{agent.Tools{tool}}
	cfg.MaxTokensPerTurn = 1000
	c := newMemoryChatd(t, mustAgent(t, cfg))
	r := c.mustTurn(t, c.mustThread(t), "find chatd")

	assert.Equal(t, "stopped", r.Status)
	assert.Equal(t, true, r.Message.Meta["drupal.org/ai.stopped"])
	assert.Equal(t, map[string]any{"model": "test-model", "input_tokens": 900.0, "output_tokens": 200.0},
		r.Message.Meta["drupal.org/ai.usage"])
	assert.Len(t, m.sent(), 1, "no model call after the cap")
	require.Len(t, r.toolCalls(), 1)
	assert.Equal(t, "skipped", r.toolCalls()[0]["status"])
	assert.True(t, strings.HasPrefix(r.Message.Text, "Let me look."), r.Message.Text)
}

func TestEveryToolCallHasASpan(t *testing.T) {
	rec := newTestTracing(t)
	m := newFakeModel(t,
		toolReply("", call{"call_1", "ask_user", `{"message":""}`}, call{"call_2", "nosuch", `{}`}),
		toolReply("", call{"call_3", "ask_user", `{"message":"Which one?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}`}))
	c := newMemoryChatd(t, mustAgent(t, agentConfig(m)))
	r := c.mustTurn(t, c.mustThread(t), "go")
	require.Equal(t, "input_required", r.Status)

	var got []string
	for _, s := range findSpans(rec.Ended(), "execute_tool") {
		got = append(got, attrs(s)["gen_ai.tool.name"].AsString()+" "+attrs(s)["gen_ai.tool.call.id"].AsString())
	}
	assert.Equal(t, []string{"ask_user call_1", "nosuch call_2", "ask_user call_3"}, got)
}
