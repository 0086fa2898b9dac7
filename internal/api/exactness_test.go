package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/api"
	"chatd/internal/blocks"
	"chatd/internal/turn"
)

// What a client sends is what it reads back.

// exactNumbers are literals a float64 would change, and a few more.
var exactNumbers = []string{"1e400", "9007199254740993", "-0", "1.0", "0.1e-2", "1E+2", "-0.0", "123456789012345678901234567890", "5e-400"}

// canonical re-encodes a JSON value with sorted keys and numbers as
// written, so two encodings of the same value compare equal byte for byte
// and any change to a number literal or a string shows.
func canonical(tb testing.TB, raw []byte) string {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	require.NoError(tb, dec.Decode(&v), "%s", raw)
	out, err := json.Marshal(v)
	require.NoError(tb, err)
	return string(out)
}

// rawField returns the raw JSON of obj[key] (nil when absent).
func rawField(tb testing.TB, obj []byte, key string) json.RawMessage {
	tb.Helper()
	m := mustDecode[map[string]json.RawMessage](tb, obj)
	return m[key]
}

// rawHistory returns the history's messages as raw JSON objects.
func (ts *testServer) rawHistory(tb testing.TB, as, threadID string) []json.RawMessage {
	tb.Helper()
	page := mustDecode[struct {
		Messages []json.RawMessage `json:"messages"`
	}](tb, ts.mustHistoryRaw(tb, as, threadID))
	return page.Messages
}

func TestNumbersKeptDigitForDigit(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		for _, n := range exactNumbers {
			t.Run(n, func(t *testing.T) {
				meta := `{"example.com/n":` + n + `,"example.com/deep":{"list":[` + n + `,{"x":` + n + `}]}}`
				block := `{"type":"text","text":"t","_meta":` + meta + `,"x-extra":` + n + `}`
				body := `{"message":"hi","content_blocks":[` + block + `],"_meta":` + meta + `}`
				thread := ts.mustCreateThread(t, alice, "echo")
				headers := http.Header{"Idempotency-Key": {"k-" + n}}

				resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(body), header: headers})
				mustStatus(t, resp, http.StatusOK)
				user := rawField(t, resp.Body, "user_message")
				assert.Equal(t, canonical(t, []byte(meta)), canonical(t, rawField(t, user, "_meta")), "turn result")
				assert.Contains(t, string(resp.Body), "["+n+",", "the literal itself, not an equal number")

				history := ts.rawHistory(t, alice, thread)
				require.Len(t, history, 2)
				assert.Equal(t, canonical(t, []byte(meta)), canonical(t, rawField(t, history[0], "_meta")), "history")
				assert.Equal(t, canonical(t, []byte(`[`+block+`]`)), canonical(t, rawField(t, history[0], "content_blocks")))
				assert.Equal(t, canonical(t, []byte(`[`+block+`]`)), canonical(t, rawField(t, history[1], "content_blocks")), "echoed reply")

				replay := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(body), header: headers})
				mustStatus(t, replay, http.StatusOK)
				assert.Equal(t, string(resp.Body), string(replay.Body), "idempotent replay")

				st := ts.mustStream(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(body)})
				events := eventsOnly(st.readAll())
				last := events[len(events)-1]
				require.Equal(t, "turn.completed", last.event)
				assert.Equal(t, canonical(t, []byte(meta)), canonical(t, rawField(t, rawField(t, last.data, "user_message"), "_meta")), "SSE")
			})
		}
	})
}

func TestAnswersKeptDigitForDigit(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		for _, n := range exactNumbers {
			t.Run(n, func(t *testing.T) {
				thread := ts.mustCreateThread(t, alice, "echo")
				paused := ts.mustPause(t, alice, thread, `/elicit {"message":"How many?","requestedSchema":{"type":"object","properties":{"n":{"type":"number"},"s":{"type":"string"}}}}`)
				eid := paused.Elicitation.id()
				content := `{"n":` + n + `,"s":"\u00e9\ud83d\ude00"}`
				meta := `{"example.com/n":[` + n + `]}`
				resp := ts.answer(t, alice, thread, eid, `{"action":"accept","content":`+content+`,"_meta":`+meta+`}`)
				if n == "1e400" {
					// Out of a double's range: a number property cannot be
					// compared with bounds, so the answer is refused up front.
					mustProblem(t, resp, http.StatusUnprocessableEntity, "validation_failed")
					return
				}
				mustStatus(t, resp, http.StatusOK)
				history := ts.rawHistory(t, alice, thread)
				require.Len(t, history, 4)
				answerMeta := mustDecode[map[string]json.RawMessage](t, rawField(t, history[2], "_meta"))
				assert.Equal(t, canonical(t, []byte(`[`+n+`]`)), canonical(t, answerMeta["example.com/n"]))
				record := rawField(t, answerMeta["drupal.org/ai.elicitation_result"], "content")
				assert.Equal(t, canonical(t, []byte(content)), canonical(t, record))
				// echo replies with the result it received, exactly.
				reply := mustDecode[wireMessage](t, history[3])
				assert.Equal(t, canonical(t, []byte(`{"action":"accept","content":`+content+`}`)), canonical(t, []byte(reply.Message)))
			})
		}
	})
}

func TestUnkeepableValuesRefused(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		// CHATD_MAX_JSON_DEPTH raised far past what chatd can keep: the
		// exactness bound still holds.
		ts := newTestServer(t, withStoreKind(kind), withConfig(func(c *api.Config) { c.MaxJSONDepth = 5000 }))
		thread := ts.mustCreateThread(t, alice, "echo")
		deep := strings.Repeat("[", blocks.MaxDepth) + strings.Repeat("]", blocks.MaxDepth)
		tests := []struct {
			name, body, field string
		}{
			{"duplicate _meta key", `{"message":"m","_meta":{"example.com/a":1,"example.com/a":2}}`, `_meta["example.com/a"]`},
			{"duplicate key in a block", `{"message":"m","content_blocks":[{"type":"text","text":"a","text":"b"}]}`, `content_blocks[0].text`},
			{"lone surrogate in _meta", `{"message":"m","_meta":{"example.com/a":"\ud800"}}`, `_meta["example.com/a"]`},
			{"lone surrogate in text", `{"message":"\udfff"}`, `message`},
			{"invalid UTF-8", "{\"message\":\"m\",\"_meta\":{\"example.com/a\":\"\xc3\x28\"}}", `_meta["example.com/a"]`},
			{"too deep", `{"message":"m","_meta":{"example.com/a":` + deep + `}}`, `_meta["example.com/a"]` + strings.Repeat("[0]", blocks.MaxDepth-2)},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				p := mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(tc.body)}),
					http.StatusUnprocessableEntity, "validation_failed")
				assert.Equal(t, []string{tc.field}, p.fields(), "%+v", p.Errors)
			})
		}
		assert.Empty(t, ts.mustHistory(t, alice, thread), "nothing refused was stored")
	})
}

var threeDigits = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestTimestampsHaveThreeFractionalDigits(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		var stamps []string
		collect := func(raw []byte) {
			// Every string value under a key that names a time.
			var walk func(key string, v any)
			walk = func(key string, v any) {
				switch v := v.(type) {
				case map[string]any:
					for k, e := range v {
						walk(k, e)
					}
				case []any:
					for _, e := range v {
						walk(key, e)
					}
				case string:
					if key == "timestamp" || strings.HasSuffix(key, "_at") {
						stamps = append(stamps, v)
					}
				}
			}
			walk("", mustDecode[any](t, raw))
		}
		collect(ts.mustThreadRaw(t, alice, thread))
		resp := ts.postTurn(t, alice, thread, `/elicit {"message":"Ok?","requestedSchema":{"type":"object","properties":{}}}`)
		mustStatus(t, resp, http.StatusOK)
		collect(resp.Body)
		collect(ts.mustThreadRaw(t, alice, thread))
		busy := ts.postTurn(t, alice, thread, "hi")
		mustProblem(t, busy, http.StatusConflict, "elicitation_pending")
		collect(busy.Body)
		collect(ts.mustHistoryRaw(t, alice, thread))
		require.GreaterOrEqual(t, len(stamps), 8)
		for _, s := range stamps {
			assert.Regexp(t, threeDigits, s)
		}
	})
}

func TestFormModeAndDateTimeAnswers(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		const schema = `{"type":"object","properties":{"at":{"type":"string","format":"date-time","title":"When"}}}`
		t.Run("mode form accepted, not echoed", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			res := ts.mustPause(t, alice, thread, `/elicit {"mode":"form","message":"When?","requestedSchema":`+schema+`}`)
			resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + thread, as: alice})
			assert.NotContains(t, string(resp.Body), `"mode"`)
			answered := ts.mustAnswer(t, alice, thread, res.Elicitation.id(), `{"action":"accept","content":{"at":"2026-12-03t10:00:00z"}}`)
			assert.Equal(t, "Accepted — When: 2026-12-03t10:00:00z", answered.UserMessage.Message)
		})
		for _, mode := range []string{"url", "URL", "other"} {
			t.Run("mode "+mode+" refused", func(t *testing.T) {
				thread := ts.mustCreateThread(t, alice, "echo")
				res := ts.mustTurn(t, alice, thread, `/elicit {"mode":"`+mode+`","message":"When?","requestedSchema":`+schema+`}`)
				assert.Equal(t, "completed", res.Status)
				assert.True(t, strings.HasPrefix(res.Message.Message, "invalid elicitation: mode: "), res.Message.Message)
			})
		}
		t.Run("bad date-time still refused", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			res := ts.mustPause(t, alice, thread, `/elicit {"message":"When?","requestedSchema":`+schema+`}`)
			p := mustProblem(t, ts.answer(t, alice, thread, res.Elicitation.id(), `{"action":"accept","content":{"at":"2026-12-03 10:00:00z"}}`),
				http.StatusUnprocessableEntity, "validation_failed")
			assert.Equal(t, []string{"at"}, p.fields())
		})
	})
}

func TestRecordKeysRefusedInAnyCase(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	for _, key := range []string{"drupal.org/ai.elicitation_id", "DRUPAL.ORG/ai.elicitation_id", "Drupal.Org/ai.elicitation_result"} {
		t.Run(key, func(t *testing.T) {
			body := `{"message":"m","_meta":{` + quoteJSON(key) + `:"x"}}`
			p := mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(body)}),
				http.StatusUnprocessableEntity, "validation_failed")
			assert.Equal(t, []string{fmt.Sprintf("_meta[%q]", key)}, p.fields())
		})
	}
	// The name is not case-folded: another name is another key.
	ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(`{"message":"m","_meta":{"drupal.org/AI.elicitation_id":"x"}}`)})
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestDuplicateCredentialsUnauthorized(t *testing.T) {
	t.Run("principal header", func(t *testing.T) {
		ts := newTestServer(t)
		for name, values := range map[string][]string{"twice": {alice, alice}, "two principals": {alice, bob}} {
			t.Run(name, func(t *testing.T) {
				resp := ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", header: http.Header{principalHeader: values}})
				p := mustProblem(t, resp, http.StatusUnauthorized, "unauthorized")
				assert.Contains(t, p.Detail, "once")
			})
		}
		mustStatus(t, ts.do(t, testRequest{method: http.MethodPost, path: "/v1/threads", as: alice}), http.StatusCreated)
	})
	t.Run("authorization", func(t *testing.T) {
		auth, err := api.NewAPIKeyAuth([]api.APIKey{{Principal: alice, Key: "k1"}, {Principal: bob, Key: "k2"}})
		require.NoError(t, err)
		ts := newTestServer(t, withAuth(auth))
		for name, values := range map[string][]string{"twice": {"Bearer k1", "Bearer k1"}, "two keys": {"Bearer k1", "Bearer k2"}} {
			t.Run(name, func(t *testing.T) {
				resp := ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", header: http.Header{"Authorization": values}})
				mustProblem(t, resp, http.StatusUnauthorized, "unauthorized")
				assert.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
			})
		}
		mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/processors", header: http.Header{"Authorization": {"Bearer k1"}}}), http.StatusOK)
	})
}

func TestURIFieldsValidated(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		thread := ts.mustCreateThread(t, alice, "echo")
		blocksFor := func(uri string) (string, []string) {
			q := quoteJSON(uri)
			return `[{"type":"resource_link","name":"n","uri":` + q + `},` +
					`{"type":"resource","resource":{"uri":` + q + `,"text":"t"}},` +
					`{"type":"resource_link","name":"n","uri":"entity:node/5","icons":[{"src":` + q + `}]}]`,
				[]string{"content_blocks[0].uri", "content_blocks[1].resource.uri", "content_blocks[2].icons[0].src"}
		}
		for _, uri := range []string{"not a uri", "", "rel/path", "/abs", "http://exa mple.com", "ht tp://x"} {
			t.Run("refused "+uri, func(t *testing.T) {
				list, fields := blocksFor(uri)
				p := mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice,
					body: []byte(`{"message":"m","content_blocks":` + list + `}`)}), http.StatusUnprocessableEntity, "validation_failed")
				assert.Equal(t, fields, p.fields())
			})
		}
		for _, uri := range []string{"entity:node/5", "https://example.com/a?b=c#d", "urn:isbn:0451450523", "data:image/png;base64,AAAA"} {
			t.Run("accepted "+uri, func(t *testing.T) {
				list, _ := blocksFor(uri)
				mustStatus(t, ts.do(t, testRequest{method: http.MethodPost, path: turnPath(thread), as: alice,
					body: []byte(`{"message":"m","content_blocks":` + list + `}`)}), http.StatusOK)
			})
		}
		// echo's /blocks replies are processor output: refused there too.
		res := ts.mustTurn(t, alice, thread, `/blocks [{"type":"resource_link","name":"n","uri":"rel/path"}]`)
		assert.True(t, strings.HasPrefix(res.Message.Message, "invalid blocks:"), res.Message.Message)
	})
}

// metricLine returns the /metrics line starting with prefix ("" if none).
func (ts *testServer) metricLine(tb testing.TB, prefix string) string {
	tb.Helper()
	resp := ts.do(tb, testRequest{method: http.MethodGet, path: "/metrics"})
	mustStatus(tb, resp, http.StatusOK)
	for _, line := range strings.Split(string(resp.Body), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

func TestClientGoneIs499(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	// The body is announced but never finished: the client leaves mid-body.
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%s: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"message\":",
		turnPath(thread), principalHeader, alice)
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	const series = `chatd_http_request_duration_seconds_count{code="499",method="POST",route="/v1/threads/{thread_id}/turns"}`
	waitFor(t, "the request to be counted as 499", func() bool { return ts.metricLine(t, series) != "" })
	assert.Equal(t, "", ts.metricLine(t, `chatd_http_request_duration_seconds_count{code="400"`))
	assert.Equal(t, "", ts.metricLine(t, `chatd_http_request_duration_seconds_count{code="500"`))
	assert.Empty(t, ts.mustHistory(t, alice, thread))
}

func TestHeadOnEveryGetRoute(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	res := ts.mustTurn(t, alice, thread, "hi")
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml", "/v1/processors", "/v1/threads",
		"/v1/threads/" + thread, "/v1/threads/" + thread + "/messages", "/v1/threads/" + thread + "/messages?limit=0",
		"/v1/threads/" + thread + "/turns/" + res.TurnID + "/events", "/v1/threads/" + blocks.NewID()} {
		t.Run(path, func(t *testing.T) {
			header := http.Header{}
			if strings.HasSuffix(path, "/events") {
				header.Set("Accept", "text/event-stream")
			}
			get := ts.do(t, testRequest{method: http.MethodGet, path: path, as: alice, header: header})
			req, err := http.NewRequest(http.MethodHead, ts.URL+path, nil)
			require.NoError(t, err)
			req.Header = header.Clone()
			req.Header.Set(principalHeader, alice)
			resp, err := ts.Client().Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, get.Status, resp.StatusCode)
			assert.Equal(t, get.Header.Get("Content-Type"), resp.Header.Get("Content-Type"))
			assert.Empty(t, body)
		})
	}
	t.Run("405 lists HEAD", func(t *testing.T) {
		resp := ts.do(t, testRequest{method: http.MethodPut, path: "/v1/processors", as: alice})
		mustProblem(t, resp, http.StatusMethodNotAllowed, "method_not_allowed")
		assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	})
}

func TestBadRequestsNameTheShape(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	paused := ts.mustPause(t, alice, thread, `/elicit {"message":"Ok?","requestedSchema":{"type":"object","properties":{}}}`)
	const turn = "a turn is {message, content_blocks?, _meta?, parent_id?, stop_on_disconnect?, cancel_pending?}"
	const answer = "an answer is {action, content?, _meta?}"
	other := ts.mustCreateThread(t, alice, "echo")
	tests := []struct {
		name, path, body, want string
	}{
		{"unknown turn field", turnPath(other), `{"messages":"hi"}`, `unknown field "messages": ` + turn},
		{"missing message", turnPath(other), `{}`, `message: required: ` + turn},
		{"message type", turnPath(other), `{"message":1}`, `message: must be a string, not number: ` + turn},
		{"blocks not array", turnPath(other), `{"message":"m","content_blocks":{}}`, `content_blocks: must be an array of content blocks: ` + turn},
		{"turn not object", turnPath(other), `[]`, `body must be a JSON object, not array: ` + turn},
		{"malformed turn", turnPath(other), `{"message":`, `malformed JSON body: unexpected end of JSON: ` + turn},
		{"unknown answer field", answerPath(thread, paused.Elicitation.id()), `{"action":"accept","contents":{}}`, `unknown field "contents": ` + answer},
		{"thread body", "/v1/threads", `{"processors":"echo"}`, `unknown field "processors": a new thread is {processor?} or an empty body`},
		{"stop body", cancelPath(other), `{"turn":"x"}`, `unknown field "turn": a stop is {turn_id?} or an empty body`},
		{"stop turn type", cancelPath(other), `{"turn_id":5}`, `turn_id: must be a string, not number: a stop is {turn_id?} or an empty body`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustProblem(t, ts.do(t, testRequest{method: http.MethodPost, path: tc.path, as: alice, body: []byte(tc.body)}),
				http.StatusBadRequest, "invalid_request")
			assert.Equal(t, tc.want, p.Detail)
		})
	}
}

func TestRecordedAnswerUsesTitlesInFormOrder(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))
		const schema = `{"type":"object","properties":{` +
			`"title":{"type":"string","title":"Title"},"date":{"type":"string","format":"date","title":"Date"},` +
			`"notify":{"type":"boolean","title":"Notify"},"n":{"type":"integer"}}}`
		tests := []struct{ answer, want string }{
			{`{"action":"accept","content":{"notify":true,"n":9007199254740993,"date":"2026-12-03","title":"Team sync"}}`,
				"Accepted — Title: Team sync; Date: 2026-12-03; Notify: yes; n: 9007199254740993"},
			{`{"action":"accept","content":{"notify":false}}`, "Accepted — Notify: no"},
			{`{"action":"accept"}`, "Accepted."},
			{`{"action":"decline"}`, "Declined."},
			{`{"action":"cancel","content":{}}`, "Cancelled."},
		}
		for _, tc := range tests {
			t.Run(tc.want, func(t *testing.T) {
				thread := ts.mustCreateThread(t, alice, "echo")
				res := ts.mustPause(t, alice, thread, `/elicit {"message":"Book?","requestedSchema":`+schema+`}`)
				ts.mustAnswer(t, alice, thread, res.Elicitation.id(), tc.answer)
				history := ts.mustHistory(t, alice, thread)
				require.Len(t, history, 4)
				assert.Equal(t, tc.want, history[2].Message)
			})
		}
	})
}

func TestExpiredCountedOnce(t *testing.T) {
	forEachImplementation(t, func(t *testing.T, kind storeKind) {
		st := newTestStore(t, kind)
		// The pause is made with a long TTL on one server, so that nothing
		// races it; a second server on the same store re-pauses with a TTL
		// that has passed by the time anyone answers.
		short := newTestServer(t, withStore(st), withTurnConfig(func(c *turn.Config) { c.ElicitationTTL = time.Millisecond }))
		thread := short.mustCreateThread(t, alice, "echo")
		res := short.mustPause(t, alice, thread, `/elicit {"message":"Ok?","requestedSchema":{"type":"object","properties":{}}}`)
		waitFor(t, "the elicitation to expire", func() bool { return short.mustThread(t, alice, thread).PendingElicitation == nil })
		for range 3 {
			mustProblem(t, short.answer(t, alice, thread, res.Elicitation.id(), `{"action":"cancel"}`), http.StatusGone, "elicitation_expired")
		}
		assert.Equal(t, `chatd_elicitations_total{event="expired",processor="echo"} 1`,
			short.metricLine(t, `chatd_elicitations_total{event="expired"`))
	})
}

// TestJSONTurnWhoseClientLeftIs499: a JSON turn whose client gives up
// before the answer still runs to completion and is saved, and its request
// is counted and logged as 499, not as a 200 nobody read.
func TestJSONTurnWhoseClientLeftIs499(t *testing.T) {
	ts := newTestServer(t)
	thread := ts.mustCreateThread(t, alice, "echo")
	ctx, leave := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+turnPath(thread), strings.NewReader(`{"message":"/slow 1000 a b"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(principalHeader, alice)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, "the turn to run", func() bool { return ts.mustThread(t, alice, thread).RunningTurn != nil })
	leave()
	require.Error(t, <-done, "the client gave up before the turn ended")

	const route = `method="POST",route="/v1/threads/{thread_id}/turns"`
	waitFor(t, "the request to be counted as 499", func() bool {
		return ts.metricLine(t, `chatd_http_request_duration_seconds_count{code="499",`+route) != ""
	})
	assert.Equal(t, "", ts.metricLine(t, `chatd_http_request_duration_seconds_count{code="200",`+route))
	waitFor(t, "the turn to be saved", func() bool { return len(ts.mustHistory(t, alice, thread)) == 2 })
	assert.Equal(t, "a b", ts.mustHistory(t, alice, thread)[1].Message)
}
