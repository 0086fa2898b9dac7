package elicit_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/elicit"
)

// These benchmarks compare validating an elicitation result with this
// package against a general JSON Schema validator doing the same checks on
// the same ten-field schema and content:
//
//	go test -run '^$' -bench CompareValidateResult -benchmem ./internal/elicit
//
// Both sides validate already-decoded content against a schema compiled
// once, which is what the API does per answer.

// mustCompileGeneral compiles benchSchema for the general validator, with
// the two rules chatd applies that plain JSON Schema leaves open spelled
// out — no undeclared keys, no repeated multi-select values — and format
// assertion on, so both validators do the same work.
func mustCompileGeneral(tb testing.TB) *jsonschema.Schema {
	tb.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(benchSchema)))
	require.NoError(tb, err)
	root, ok := doc.(map[string]any)
	require.True(tb, ok, "benchSchema is an object")
	root["additionalProperties"] = false
	props, ok := root["properties"].(map[string]any)
	require.True(tb, ok, "benchSchema has properties")
	for _, p := range props {
		if prop, ok := p.(map[string]any); ok && prop["type"] == "array" {
			prop["uniqueItems"] = true
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(tb, c.AddResource("elicitation.json", root))
	sch, err := c.Compile("elicitation.json")
	require.NoError(tb, err)
	return sch
}

func BenchmarkCompareValidateResult(b *testing.B) {
	content := mustDecodeContent(b, benchContent)
	b.Run("elicit", func(b *testing.B) {
		req := mustNewRequest(b, benchSchema)
		res := elicit.Result{Action: elicit.Accept, Content: content}
		require.NoError(b, req.Validate(res))
		b.ReportAllocs()
		for b.Loop() {
			if err := req.Validate(res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema", func(b *testing.B) {
		sch := mustCompileGeneral(b)
		var doc any = content
		require.NoError(b, sch.Validate(doc))
		b.ReportAllocs()
		for b.Loop() {
			if err := sch.Validate(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCompareValidateResultInterleaved times both validators in
// alternating batches, so load from elsewhere on the machine falls on both
// alike, and reports each one's time per validation and the speed-up of
// this package over the general validator.
func BenchmarkCompareValidateResultInterleaved(b *testing.B) {
	const batch = 100
	content := mustDecodeContent(b, benchContent)
	req := mustNewRequest(b, benchSchema)
	res := elicit.Result{Action: elicit.Accept, Content: content}
	sch := mustCompileGeneral(b)
	var doc any = content
	require.NoError(b, req.Validate(res))
	require.NoError(b, sch.Validate(doc))
	var own, general time.Duration
	for b.Loop() {
		t0 := time.Now()
		for range batch {
			if err := req.Validate(res); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for range batch {
			if err := sch.Validate(doc); err != nil {
				b.Fatal(err)
			}
		}
		own += t1.Sub(t0)
		general += time.Since(t1)
	}
	n := float64(b.N * batch)
	b.ReportMetric(float64(own.Nanoseconds())/n, "elicit-ns/validation")
	b.ReportMetric(float64(general.Nanoseconds())/n, "jsonschema-ns/validation")
	b.ReportMetric(float64(general)/float64(own), "speedup")
}

// TestCompareValidatorsAgree keeps the comparison honest: the general
// validator, set up as in the benchmark, accepts and refuses the same
// contents as this package, so it is not measured doing less.
func TestCompareValidatorsAgree(t *testing.T) {
	req := mustNewRequest(t, benchSchema)
	general := mustCompileGeneral(t)
	tests := []struct {
		name    string
		patch   string
		wantErr bool
	}{
		{name: "valid", patch: `{}`, wantErr: false},
		{name: "missing required", patch: `{"name":null}`, wantErr: true},
		{name: "undeclared key", patch: `{"nickname":"Ada"}`, wantErr: true},
		{name: "too long", patch: `{"name":"` + string(bytes.Repeat([]byte("é"), 81)) + `"}`, wantErr: true},
		{name: "bad email", patch: `{"email":"not an address"}`, wantErr: true},
		{name: "bad date", patch: `{"start":"2025-13-01"}`, wantErr: true},
		{name: "fraction for integer", patch: `{"guests":2.5}`, wantErr: true},
		{name: "below minimum", patch: `{"guests":0}`, wantErr: true},
		{name: "not in enum", patch: `{"room":"attic"}`, wantErr: true},
		{name: "not a oneOf const", patch: `{"diet":"keto"}`, wantErr: true},
		{name: "repeated option", patch: `{"extras":["spa","spa"]}`, wantErr: true},
		{name: "too many options", patch: `{"extras":["spa","parking","breakfast","late-checkout"]}`, wantErr: true},
		{name: "wrong type", patch: `{"newsletter":"yes"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := mustPatchContent(t, benchContent, tt.patch)
			gotElicit := req.Validate(elicit.Result{Action: elicit.Accept, Content: content}) != nil
			gotGeneral := general.Validate(any(content)) != nil
			assert.Equal(t, tt.wantErr, gotElicit, "elicit")
			assert.Equal(t, tt.wantErr, gotGeneral, "jsonschema")
		})
	}
}

// mustPatchContent decodes base and patch as the API would and applies the
// patch: a null value removes the key, any other value sets it.
func mustPatchContent(tb testing.TB, base, patch string) map[string]any {
	tb.Helper()
	content := mustDecodeContent(tb, base)
	dec := json.NewDecoder(bytes.NewReader([]byte(patch)))
	dec.UseNumber()
	var changes map[string]any
	require.NoError(tb, dec.Decode(&changes))
	for k, v := range changes {
		if v == nil {
			delete(content, k)
			continue
		}
		content[k] = v
	}
	return content
}
