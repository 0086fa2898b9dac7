package agent

import (
	"encoding/json"
	"reflect"
	"testing"

	segjson "github.com/segmentio/encoding/json"

	"chatd/internal/processor/remote"
)

// The agents file is the operator's, but a typo must never crash chatd: any
// file either fails with an error or yields agents that build.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte("agents:\n  - name: a\n    base_url: http://127.0.0.1:11434/v1\n    model: m\n"))
	f.Add([]byte("agents: []\nmcp_servers:\n  - {name: s, transport: stdio, command: x, args: [a], env: {A: b}}\n"))
	f.Add([]byte("agents:\n  - name: a\n    base_url: http://h/v1\n    model: m\n    tools: {confirm: ['[']}\n"))
	f.Add([]byte("agents: &a [*a]\n"))
	f.Add([]byte("remote_processors:\n  - {name: r, url: 'http://127.0.0.1:1/', secret_env: S, headers: {X-A: b}, timeout: 2s}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFile("agents.yaml", data, func(string) string { return "key" })
		if err != nil {
			return
		}
		for _, a := range file.Agents {
			if _, err := New(a.Config); err != nil {
				t.Fatalf("agent %q parsed but does not build: %v", a.Name, err)
			}
		}
		for _, r := range file.RemoteProcessors {
			if _, err := remote.New(r.Config); err != nil {
				t.Fatalf("remote processor %q parsed but does not build: %v", r.Name, err)
			}
		}
	})
}

// Tool calls' arguments come from the model: whatever it sends is either
// refused with a message for it or becomes a valid request.
func FuzzToolArguments(f *testing.F) {
	f.Add(`{"message":"Which size?","requestedSchema":{"type":"object","properties":{"size":{"type":"string","enum":["S","M"]}}}}`)
	f.Add(`{"message":"x","requestedSchema":{"type":"object","properties":{"a":{"type":"object"}}}}`)
	f.Add(`{"query":`)
	f.Add(``)
	f.Add(`[1,2]`)
	f.Fuzz(func(t *testing.T, s string) {
		args, err := arguments(s)
		if err != nil {
			return
		}
		if !json.Valid(args) {
			t.Fatalf("arguments(%q) = %s, not JSON", s, args)
		}
		req, err := askUserRequest(args)
		if err == nil && (req == nil || req.Message == "") {
			t.Fatalf("askUserRequest(%s) accepted a request without a question", args)
		}
		_, _ = confirmRequest("tool", args)
	})
}

// Streamed chunks come from the model: none may crash the accumulator.
func FuzzChunks(f *testing.F) {
	f.Add(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"t","arguments":"{\"a\""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}`)
	f.Add(`{"choices":[{"index":5,"delta":{"tool_calls":[{"index":-1,"id":"x"}]}}]}`, `{"choices":null}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var acc callAccumulator
		for _, data := range []string{a, b} {
			// The stream's decoder (segmentio's) must read a chunk exactly
			// as encoding/json does.
			var c, std wireChunk
			err, stdErr := segjson.Unmarshal([]byte(data), &c), json.Unmarshal([]byte(data), &std)
			if (err == nil) != (stdErr == nil) {
				t.Fatalf("%q: segmentio %v, encoding/json %v", data, err, stdErr)
			}
			if err != nil {
				continue
			}
			if !reflect.DeepEqual(c, std) {
				t.Fatalf("%q: segmentio %+v, encoding/json %+v", data, c, std)
			}
			for _, ch := range c.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					acc.add(tc)
				}
			}
		}
		for _, c := range acc.calls() {
			if c.ID == "" {
				t.Fatal("a call without an ID: its result could not name it")
			}
		}
	})
}
