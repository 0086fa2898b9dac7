package elicit_test

import (
	"testing"

	"chatd/internal/elicit"
)

// benchSchema has ten properties of mixed kinds, the size of a typical
// elicitation form.
const benchSchema = `{"type":"object","properties":{
	"name":{"type":"string","minLength":1,"maxLength":80},
	"email":{"type":"string","format":"email"},
	"website":{"type":"string","format":"uri"},
	"start":{"type":"string","format":"date"},
	"guests":{"type":"integer","minimum":1,"maximum":12},
	"budget":{"type":"number","minimum":0,"maximum":10000},
	"newsletter":{"type":"boolean"},
	"room":{"type":"string","enum":["single","double","suite"]},
	"diet":{"type":"string","oneOf":[{"const":"none","title":"None"},{"const":"veg","title":"Vegetarian"},{"const":"vegan","title":"Vegan"}]},
	"extras":{"type":"array","items":{"type":"string","enum":["parking","breakfast","spa","late-checkout"]},"maxItems":3}},
	"required":["name","email","start","guests","room"]}`

const benchContent = `{"name":"Ada Lovelace","email":"ada@example.com","website":"https://example.com/ada",
	"start":"2025-11-25","guests":2,"budget":450.5,"newsletter":false,"room":"double","diet":"veg",
	"extras":["parking","breakfast"]}`

func BenchmarkValidateResult10Fields(b *testing.B) {
	req := mustNewRequest(b, benchSchema)
	res := elicit.Result{Action: elicit.Accept, Content: mustDecodeContent(b, benchContent)}
	if err := req.Validate(res); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := req.Validate(res); err != nil {
			b.Fatal(err)
		}
	}
}
