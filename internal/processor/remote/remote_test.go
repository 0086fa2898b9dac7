package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/processor/remote"
)

func mustEncode(tb testing.TB, msgs ...blocks.Message) blocks.EncodedMessages {
	tb.Helper()
	var out blocks.EncodedMessages
	for _, m := range msgs {
		data, err := blocks.Marshal(m)
		require.NoError(tb, err)
		out = append(out, data)
	}
	return out
}

func discard(processor.Delta) {}

// TestRequest: what a plain turn sends, checked against the schema by the
// fake, signed over the exact bytes sent, with the processor's own header;
// the history's stored messages are copied into it as they are.
func TestRequest(t *testing.T) {
	fake := newFakeRemote(t, "s3cret", func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		answerJSON(t, w, `{"text":"ok"}`)
	})
	p := mustRemote(t, remote.Config{Name: "site", URL: fake.URL + "/chat", Secret: "s3cret", Headers: map[string]string{"X-Site": "main"}})
	card := blocks.MustBlock(blocks.EntityCard("node", "42", "6f1c9f1e-2f53-4d7b-9a4e-0a8f3b1c2d3e", ""))
	msg := blocks.NewMessage(blocks.RoleUser, "Show me <node 42> & more", []blocks.ContentBlock{card}, map[string]any{"example.com/x.n": json.Number("1.50")})
	history := mustEncode(t,
		blocks.NewMessage(blocks.RoleUser, "hello", nil, nil),
		blocks.NewMessage(blocks.RoleAssistant, "Hi!", nil, map[string]any{"example.com/x.flag": true}))
	in := processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Principal: "alice", Message: &msg, History: history}

	out, err := p.Process(context.Background(), in, discard)
	require.NoError(t, err)
	assert.Equal(t, processor.Output{Text: "ok"}, out)

	got := fake.received()
	require.Len(t, got, 1)
	assert.Equal(t, "application/json", got[0].header.Get("Content-Type"))
	assert.Equal(t, in.TurnID, got[0].header.Get("Chatd-Turn-Id"))
	assert.Equal(t, "main", got[0].header.Get("X-Site"))
	var req wireRequest
	require.NoError(t, json.Unmarshal(got[0].body, &req))
	assert.Equal(t, in.ThreadID, req.ThreadID)
	assert.Equal(t, in.TurnID, req.TurnID)
	assert.Equal(t, "site", req.Processor)
	assert.Equal(t, "alice", req.Principal)
	assert.Nil(t, req.Resume)
	assert.Equal(t, msg.ID, req.Message.ID)
	assert.Equal(t, "Show me <node 42> & more", req.Message.Text)
	assert.Equal(t, "entity:node/42", req.Message.ContentBlocks[0]["uri"])
	assert.Contains(t, string(got[0].body), `"example.com/x.n":1.50`, "numbers as written")
	assert.Contains(t, string(got[0].body), `"history":[`+string(history[0])+","+string(history[1])+`]`, "history copied byte for byte")
	require.Len(t, req.History, 2)
	assert.Equal(t, []string{"hello", "Hi!"}, []string{req.History[0].Text, req.History[1].Text}, "oldest first")
}

func TestRequestUnsignedWithoutSecret(t *testing.T) {
	fake := newFakeRemote(t, "", func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		answerJSON(t, w, `{"text":""}`)
	})
	msg := blocks.NewMessage(blocks.RoleUser, "hi", nil, nil)
	_, err := mustRemote(t, remote.Config{Name: "r", URL: fake.URL}).Process(context.Background(),
		processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Principal: "bob", Message: &msg}, discard)
	require.NoError(t, err)
	got := fake.received()
	require.Len(t, got, 1)
	assert.Empty(t, got[0].header.Values("Chatd-Signature"))
	assert.Contains(t, string(got[0].body), `"history":[]`, "no history is an empty list, not null")
}

// TestResumeRequest: a resume sends the recorded answer as the message and
// the state as the processor paused with it; result holds the client's
// own _meta, not chatd's record of the answer.
func TestResumeRequest(t *testing.T) {
	fake := newFakeRemote(t, "", func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		answerJSON(t, w, `{"text":"thanks"}`)
	})
	req, err := elicit.NewRequest("Your name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`), nil)
	require.NoError(t, err)
	result := elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Ada"}}
	recorded := blocks.NewMessage(blocks.RoleUser, "Name: Ada", nil, map[string]any{
		"example.com/x.source":       "form",
		blocks.MetaElicitationResult: map[string]any{"elicitation_id": req.ID, "action": "accept", "content": result.Content},
	})
	in := processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Principal: "alice",
		Resume: &processor.Resume{Request: req, Result: result, State: []byte(`{"step":2,"list":[1,2.0]}`), Message: recorded}}

	_, err = mustRemote(t, remote.Config{Name: "r", URL: fake.URL}).Process(context.Background(), in, discard)
	require.NoError(t, err)
	got := fake.received()
	require.Len(t, got, 1)
	var w wireRequest
	require.NoError(t, json.Unmarshal(got[0].body, &w))
	require.NotNil(t, w.Resume)
	assert.Equal(t, req.ID, w.Resume.ElicitationID)
	assert.JSONEq(t, `{"step":2,"list":[1,2.0]}`, string(w.Resume.State))
	assert.Contains(t, string(got[0].body), `"state":{"step":2,"list":[1,2.0]}`, "the state as it was saved")
	assert.Equal(t, "accept", w.Resume.Result.Action)
	assert.Equal(t, map[string]any{"name": "Ada"}, w.Resume.Result.Content)
	assert.Equal(t, map[string]any{"example.com/x.source": "form"}, w.Resume.Result.Meta)
	assert.Equal(t, recorded.ID, w.Message.ID)
	assert.Equal(t, "Name: Ada", w.Message.Text)
	assert.Contains(t, w.Message.Meta, blocks.MetaElicitationResult, "the message as history records it")
}

// TestAnswerBecomesOutput: the same answer as one JSON document and as a
// stream gives the same output; a pause's elicitation gets an ID, keeps
// its own _meta, and its state is kept compact.
func TestAnswerBecomesOutput(t *testing.T) {
	const answer = `{"text":"Pick one","content_blocks":[{"type":"resource_link","uri":"entity:node/7","name":"Seven",
		"_meta":{"drupal.org/ai.entity":{"entity_type":"node","id":"7","uuid":"6f1c9f1e-2f53-4d7b-9a4e-0a8f3b1c2d3e","view_mode":"teaser"}}}],
		"_meta":{"drupal.org/ai.suggested_replies":["yes"]},
		"pause":{"elicitation":{"message":"Size?","requestedSchema":{"type":"object","properties":{"size":{"type":"string","enum":["S","M"]}}},
		"_meta":{"example.com/x.k":1}},"state":{ "asked" : "size" }}}`
	compact := func(s string) string {
		var buf bytes.Buffer
		require.NoError(t, json.Compact(&buf, []byte(s)))
		return buf.String()
	}
	for name, write := range map[string]func(w http.ResponseWriter){
		"json": func(w http.ResponseWriter) { answerJSON(t, w, compact(answer)) },
		"ndjson": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			body := `{"type":"text.delta","delta":"Pick "}` + "\n\n" + `{"type":"text.delta","delta":"one","_meta":{"drupal.org/ai.status_item":{"label":"x"}}}` + "\n" +
				`{"type":"result",` + strings.TrimPrefix(compact(answer), "{") + "\n"
			mustMatchAnswer(t, "application/x-ndjson", []byte(body))
			_, _ = io.WriteString(w, body)
		},
	} {
		t.Run(name, func(t *testing.T) {
			fake := newFakeRemote(t, "", func(w http.ResponseWriter, _ *http.Request, _ wireRequest) { write(w) })
			msg := blocks.NewMessage(blocks.RoleUser, "hi", nil, nil)
			var deltas []processor.Delta
			out, err := mustRemote(t, remote.Config{Name: "r", URL: fake.URL}).Process(context.Background(),
				processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Message: &msg},
				func(d processor.Delta) { deltas = append(deltas, d) })
			require.NoError(t, err)
			assert.Equal(t, "Pick one", out.Text)
			require.Len(t, out.Blocks, 1)
			ref, ok := out.Blocks[0].Entity()
			require.True(t, ok)
			assert.Equal(t, "7", ref.ID)
			assert.Equal(t, []any{"yes"}, out.Meta["drupal.org/ai.suggested_replies"])
			require.NotNil(t, out.Pause)
			assert.True(t, blocks.IsCanonicalID(out.Pause.Request.ID))
			assert.Equal(t, out.Pause.Request.ID, out.Pause.Request.Meta[blocks.MetaElicitationID])
			assert.Equal(t, json.Number("1"), out.Pause.Request.Meta["example.com/x.k"])
			assert.Equal(t, `{"asked":"size"}`, string(out.Pause.State))
			if name == "ndjson" {
				require.Len(t, deltas, 2)
				assert.Equal(t, "Pick ", deltas[0].Text)
				assert.Contains(t, deltas[1].Meta, "drupal.org/ai.status_item")
			}
		})
	}
}

// TestDeltasArriveAsTheyAreRead: the fake writes the result only after the
// processor has emitted the first delta, which it can only do if it emits
// each line as it reads it.
func TestDeltasArriveAsTheyAreRead(t *testing.T) {
	emitted := make(chan struct{})
	fake := newFakeRemote(t, "", func(w http.ResponseWriter, _ *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintln(w, `{"type":"text.delta","delta":"first "}`)
		w.(http.Flusher).Flush()
		select {
		case <-emitted:
		case <-time.After(5 * time.Second):
			t.Error("the first delta was not emitted before the answer ended")
		}
		fmt.Fprintln(w, `{"type":"result","text":"first last"}`)
	})
	msg := blocks.NewMessage(blocks.RoleUser, "hi", nil, nil)
	var once bool
	out, err := mustRemote(t, remote.Config{Name: "r", URL: fake.URL}).Process(context.Background(),
		processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Message: &msg},
		func(d processor.Delta) {
			if !once {
				once = true
				assert.Equal(t, "first ", d.Text)
				close(emitted)
			}
		})
	require.NoError(t, err)
	assert.Equal(t, "first last", out.Text)
}

// TestCancelClosesTheRequest: the turn's context ending (a stop, the turn
// timeout) closes the request at once; the processor sees it go.
func TestCancelClosesTheRequest(t *testing.T) {
	arrived, closed := make(chan struct{}), make(chan struct{})
	fake := newFakeRemote(t, "", func(w http.ResponseWriter, r *http.Request, _ wireRequest) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintln(w, `{"type":"text.delta","delta":"thinking"}`)
		w.(http.Flusher).Flush()
		close(arrived)
		<-r.Context().Done()
		close(closed)
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	msg := blocks.NewMessage(blocks.RoleUser, "hi", nil, nil)
	_, err := mustRemote(t, remote.Config{Name: "r", URL: fake.URL}).Process(ctx,
		processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Message: &msg}, discard)
	require.ErrorIs(t, err, context.Canceled)
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the processor's request stayed open after the turn ended")
	}
}

// TestTimeoutIsTheProcessors: the processor's own timeout, shorter than
// the turn's, fails the turn naming it.
func TestTimeoutIsTheProcessors(t *testing.T) {
	fake := newFakeRemote(t, "", func(w http.ResponseWriter, r *http.Request, _ wireRequest) {
		<-r.Context().Done()
	})
	msg := blocks.NewMessage(blocks.RoleUser, "hi", nil, nil)
	start := time.Now()
	_, err := mustRemote(t, remote.Config{Name: "r", URL: fake.URL, Timeout: 100 * time.Millisecond}).Process(context.Background(),
		processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Message: &msg}, discard)
	var perr *processor.Error
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "the remote processor did not answer within its timeout of 100ms", perr.Detail)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// TestRedirectsAreNotFollowed: a signed turn goes to the configured URL
// and nowhere else.
func TestRedirectsAreNotFollowed(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the redirect was followed")
	}))
	t.Cleanup(elsewhere.Close)
	fake := newFakeRemote(t, "", func(w http.ResponseWriter, r *http.Request, _ wireRequest) {
		http.Redirect(w, r, elsewhere.URL, http.StatusTemporaryRedirect)
	})
	msg := blocks.NewMessage(blocks.RoleUser, "hi", nil, nil)
	_, err := mustRemote(t, remote.Config{Name: "r", URL: fake.URL}).Process(context.Background(),
		processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Message: &msg}, discard)
	var perr *processor.Error
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "the remote processor answered 307 Temporary Redirect", perr.Detail)
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	msg := blocks.NewMessage(blocks.RoleUser, "hi", nil, nil)
	_, err := mustRemote(t, remote.Config{Name: "r", URL: url}).Process(context.Background(),
		processor.Input{ThreadID: blocks.NewID(), TurnID: blocks.NewID(), Message: &msg}, discard)
	var perr *processor.Error
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "the remote processor could not be reached", perr.Detail, "the detail names no address")
	assert.NotContains(t, perr.Detail, "127.0.0.1")
}

func TestNewRefusesBadConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  remote.Config
		want string
	}{
		"no url":             {remote.Config{Name: "r"}, "url: want an http or https URL"},
		"relative url":       {remote.Config{Name: "r", URL: "/chat"}, "url: want an http or https URL"},
		"negative timeout":   {remote.Config{Name: "r", URL: "http://127.0.0.1:1/", Timeout: -time.Second}, "timeout: must not be negative"},
		"chatd's header":     {remote.Config{Name: "r", URL: "http://127.0.0.1:1/", Headers: map[string]string{"chatd-turn-id": "x"}}, "headers: chatd-turn-id: is set by chatd"},
		"bad header value":   {remote.Config{Name: "r", URL: "http://127.0.0.1:1/", Headers: map[string]string{"X-A": "a\nb"}}, "headers: X-A: not a valid header value"},
		"transport's header": {remote.Config{Name: "r", URL: "http://127.0.0.1:1/", Headers: map[string]string{"Content-Length": "1"}}, "headers: Content-Length: is set by the HTTP transport"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := remote.New(tc.cfg)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.want), "%v", err)
		})
	}
}

func TestSign(t *testing.T) {
	body := []byte(`{"a":1}`)
	sig := remote.Sign([]byte("key"), time.Unix(1700000000, 0), body)
	// Computed elsewhere: HMAC-SHA256, key "key", over `1700000000.{"a":1}`.
	assert.Equal(t, "t=1700000000,v1=a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03", sig)
	require.NoError(t, verifySignature("key", sig, body, time.Unix(1700000000, 0)))
	assert.Error(t, verifySignature("key", sig, []byte(`{"a":1} `), time.Unix(1700000000, 0)), "one byte more")
	assert.Error(t, verifySignature("other", sig, body, time.Unix(1700000000, 0)))
}

// TestSchemaRefuses: the schema the tests check against is not vacuous.
func TestSchemaRefuses(t *testing.T) {
	for def, docs := range map[string][]string{
		"answer": {`{}`, `{"text":1}`, `{"text":"","contentBlocks":[]}`, `{"text":"","_meta":{"a/b/c":1}}`,
			`{"text":"","content_blocks":[{"type":"text"}]}`, `{"text":"","pause":{"state":{}}}`},
		"line":    {`{"type":"text.delta"}`, `{"type":"done","text":""}`, `{"type":"result","delta":"x","text":""}`},
		"request": {`{"thread_id":"x"}`},
	} {
		for _, doc := range docs {
			inst, err := jsonschemaUnmarshal(doc)
			require.NoError(t, err)
			assert.Error(t, mustSchema(t, def).Validate(inst), "%s: %s", def, doc)
		}
	}
}
