package elicit_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

func TestResultAccessors(t *testing.T) {
	res := elicit.Result{Action: elicit.Accept, Content: mustDecodeContent(t, `{
		"title": "Team sync", "big": 9007199254740993, "one": 1.0, "hundred": 1e2, "half": 0.5, "huge": 1e400,
		"neg0": -0, "notify": false, "topics": ["go", "mcp"], "bad": ["go", 1]}`)}
	res.Content["goInt"] = 7
	res.Content["goFloat"] = 2.0
	res.Content["goStrings"] = []string{"a"}

	s, ok := res.String("title")
	assert.True(t, ok)
	assert.Equal(t, "Team sync", s)
	_, ok = res.String("big")
	assert.False(t, ok)

	for name, want := range map[string]int64{"big": 9007199254740993, "one": 1, "hundred": 100, "neg0": 0, "goInt": 7, "goFloat": 2} {
		got, ok := res.Int(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"half", "huge", "title", "missing"} {
		_, ok := res.Int(name)
		assert.False(t, ok, name)
	}

	f, ok := res.Float("half")
	assert.True(t, ok)
	assert.Equal(t, 0.5, f)
	_, ok = res.Float("huge")
	assert.False(t, ok, "1e400 is no float64")

	b, ok := res.Bool("notify")
	assert.True(t, ok)
	assert.False(t, b)

	list, ok := res.Strings("topics")
	assert.True(t, ok)
	assert.Equal(t, []string{"go", "mcp"}, list)
	list, ok = res.Strings("goStrings")
	assert.True(t, ok)
	assert.Equal(t, []string{"a"}, list)
	_, ok = res.Strings("bad")
	assert.False(t, ok)
}

func TestDescribeUsesTitlesInFormOrder(t *testing.T) {
	req := mustNewRequest(t, `{"type":"object","properties":{
		"title":{"type":"string","title":"Title"},
		"date":{"type":"string","format":"date","title":"Date"},
		"room":{"type":"string","title":"Room","oneOf":[{"const":"a","title":"Room A"},{"const":"b","title":"Room B"}]},
		"size":{"type":"string","enum":["s","l"],"enumNames":["Small","Large"]},
		"topics":{"type":"array","title":"Topics","items":{"anyOf":[{"const":"go","title":"Go"},{"const":"mcp","title":"MCP"}]}},
		"attendees":{"type":"integer","title":"Attendees"},
		"notify":{"type":"boolean","title":"Notify"}}}`)
	tests := []struct {
		name string
		res  elicit.Result
		want string
	}{
		{"declined", elicit.Result{Action: elicit.Decline}, "Declined."},
		{"cancelled", elicit.Result{Action: elicit.Cancel}, "Cancelled."},
		{"accepted empty", elicit.Result{Action: elicit.Accept}, "Accepted."},
		{"spec example", elicit.Result{Action: elicit.Accept, Content: mustDecodeContent(t,
			`{"notify":true,"date":"2026-12-03","title":"Team sync"}`)}, "Accepted — Title: Team sync; Date: 2026-12-03; Notify: yes"},
		{"every kind", elicit.Result{Action: elicit.Accept, Content: mustDecodeContent(t,
			`{"attendees":9007199254740993,"topics":["mcp","go"],"size":"l","room":"b","notify":false}`)},
			"Accepted — Room: Room B; size: Large; Topics: MCP, Go; Attendees: 9007199254740993; Notify: no"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, req.Validate(tc.res))
			assert.Equal(t, tc.want, req.Describe(tc.res))
		})
	}
}

func TestParseParamsMode(t *testing.T) {
	const schema = `{"type":"object","properties":{"ok":{"type":"boolean"}}}`
	for _, tc := range []struct {
		mode  string // "" sends none
		field string // "" when accepted
	}{
		{"", ""}, {`"form"`, ""}, {`"url"`, "mode"}, {`"FORM"`, "mode"}, {`"other"`, "mode"}, {`null`, "mode"}, {`1`, "mode"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			doc := `{"message":"Sure?","requestedSchema":` + schema
			if tc.mode != "" {
				doc += `,"mode":` + tc.mode
			}
			doc += `}`
			req, err := elicit.ParseParams([]byte(doc))
			if tc.field != "" {
				assert.Equal(t, []blocks.FieldError{{Field: "mode", Detail: mustFieldErrors(t, err)[0].Detail}}, mustFieldErrors(t, err))
				return
			}
			require.NoError(t, err)
			assert.True(t, blocks.IsCanonicalID(req.ID))
			out, err := json.Marshal(req)
			require.NoError(t, err)
			assert.NotContains(t, string(out), "mode", "mode is never echoed")
			again, err := elicit.DecodeRequest(out)
			require.NoError(t, err)
			assert.Equal(t, req.ID, again.ID)
		})
	}
}

func TestDateTimeAnswersAcceptLowercase(t *testing.T) {
	req := mustNewRequest(t, `{"type":"object","properties":{"at":{"type":"string","format":"date-time"}}}`)
	for s, ok := range map[string]bool{
		"2026-12-03T10:00:00Z": true, "2026-12-03t10:00:00z": true, "2026-12-03t10:00:00.250+01:00": true,
		"2026-12-03 10:00:00Z": false, "2026-12-03T10:00:00": false,
	} {
		err := req.Validate(elicit.Result{Action: elicit.Accept, Content: map[string]any{"at": s}})
		if ok {
			assert.NoError(t, err, s)
		} else {
			assert.Error(t, err, s)
		}
	}
}
