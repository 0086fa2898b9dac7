package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonGen writes random JSON text aimed at what a decode could change:
// number literals of every shape, strings with escapes, astral characters
// and line separators, nesting, and now and then something chatd must
// refuse (a duplicated key, a lone surrogate).
type jsonGen struct {
	r *rand.Rand
	// refusable is set when the text holds something chatd must refuse.
	refusable bool
}

var trickyNumbers = []string{"1e400", "-1e400", "9007199254740993", "-0", "1.0", "0.1e-2", "1E+2", "5e-324", "2e-400",
	"123456789012345678901234567890", "0.30000000000000004", "1.7976931348623157e308", "-0.0e-0"}

func (g *jsonGen) number() string {
	if g.r.IntN(3) == 0 {
		return trickyNumbers[g.r.IntN(len(trickyNumbers))]
	}
	var b strings.Builder
	if g.r.IntN(3) == 0 {
		b.WriteByte('-')
	}
	if g.r.IntN(4) == 0 {
		b.WriteByte('0')
	} else {
		b.WriteByte(byte('1' + g.r.IntN(9)))
		for range g.r.IntN(25) {
			b.WriteByte(byte('0' + g.r.IntN(10)))
		}
	}
	if g.r.IntN(2) == 0 {
		b.WriteByte('.')
		for range 1 + g.r.IntN(20) {
			b.WriteByte(byte('0' + g.r.IntN(10)))
		}
	}
	if g.r.IntN(3) == 0 {
		b.WriteByte("eE"[g.r.IntN(2)])
		if s := g.r.IntN(3); s < 2 {
			b.WriteByte("+-"[s])
		}
		for range 1 + g.r.IntN(4) {
			b.WriteByte(byte('0' + g.r.IntN(10)))
		}
	}
	return b.String()
}

func (g *jsonGen) str() string {
	pieces := []string{"a", "Z", " ", "é", "日本", "😀", `\u00e9`, `\ud83d\ude00`, `\n`, `\t`, `\"`, `\\`, `\/`, `\u2028`, "\u2029",
		`\u0000`, `\u001f`, "<>&", `\b\f\r`, "%zz", "ü"}
	var b strings.Builder
	b.WriteByte('"')
	for range g.r.IntN(8) {
		if g.r.IntN(60) == 0 {
			b.WriteString(`\udc00`) // a lone surrogate: not a character
			g.refusable = true
			continue
		}
		b.WriteString(pieces[g.r.IntN(len(pieces))])
	}
	b.WriteByte('"')
	return b.String()
}

func (g *jsonGen) value(depth int) string {
	n := 6
	if depth <= 0 {
		n = 4
	}
	switch g.r.IntN(n) {
	case 0:
		return g.number()
	case 1:
		return g.str()
	case 2:
		return []string{"true", "false", "null"}[g.r.IntN(3)]
	case 3:
		return g.number()
	case 4:
		items := make([]string, g.r.IntN(4))
		for i := range items {
			items[i] = g.value(depth - 1)
		}
		return "[" + strings.Join(items, ",") + "]"
	default:
		m := g.r.IntN(4)
		keys := make([]string, 0, m)
		seen := map[string]bool{}
		members := make([]string, 0, m)
		for range m {
			k := g.str()
			if len(keys) > 0 && g.r.IntN(30) == 0 {
				k = keys[0] // a duplicated key: only one value could be kept
			}
			// Two spellings of one key ("é" and "\u00e9", or two empty
			// keys drawn by chance) are a duplicate too.
			var decoded string
			if json.Unmarshal([]byte(k), &decoded) == nil {
				if seen[decoded] {
					g.refusable = true
				}
				seen[decoded] = true
			}
			keys = append(keys, k)
			members = append(members, k+":"+g.value(depth-1))
		}
		return "{" + strings.Join(members, ",") + "}"
	}
}

// TestAcceptedValuesComeBackExactly is chatd's exactness property on both stores:
// any turn body or answer the API accepts comes back from history with its
// free-form values unchanged (every number literal and string as sent), and
// nothing a request carries makes history fail. What chatd refuses is a
// 4xx, never a 5xx.
func TestAcceptedValuesComeBackExactly(t *testing.T) {
	const rounds = 40
	forEachStore(t, func(t *testing.T, kind storeKind) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		g := &jsonGen{r: rand.New(rand.NewPCG(seed, 10))}
		ts := newTestServer(t, withStoreKind(kind))
		turns := ts.mustCreateThread(t, alice, "echo")
		accepted, refused := 0, 0
		for i := range rounds {
			g.refusable = false
			v := g.value(4)
			body := fmt.Sprintf(`{"message":"m%d","content_blocks":[{"type":"text","text":"t","_meta":{"example.com/v":%s},"x-v":%s}],"_meta":{"example.com/v":%s}}`, i, v, v, v)
			resp := ts.do(t, testRequest{method: http.MethodPost, path: turnPath(turns), as: alice, body: []byte(body)})
			if resp.Status != http.StatusOK {
				require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "body %s: %s", body, resp.Body)
				assert.True(t, g.refusable, "refused a value chatd can keep: %s: %s", v, resp.Body)
				refused++
				continue
			}
			assert.False(t, g.refusable, "accepted a value chatd cannot keep: %s", v)
			accepted++
			history := ts.rawHistory(t, alice, turns)
			user := history[len(history)-2]
			want := canonical(t, []byte(`{"example.com/v":`+v+`}`))
			assert.Equal(t, want, canonical(t, rawField(t, user, "_meta")), "value %s", v)
			wantBlocks := canonical(t, []byte(`[{"type":"text","text":"t","_meta":{"example.com/v":`+v+`},"x-v":`+v+`}]`))
			assert.Equal(t, wantBlocks, canonical(t, rawField(t, user, "content_blocks")))
			assert.Equal(t, wantBlocks, canonical(t, rawField(t, history[len(history)-1], "content_blocks")), "echoed")
		}

		const schema = `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer"}}}`
		for range rounds / 2 {
			g.refusable = false
			thread := ts.mustCreateThread(t, alice, "echo")
			paused := ts.mustPause(t, alice, thread, `/elicit {"message":"?","requestedSchema":`+schema+`}`)
			n := g.number()
			content := `{"s":` + g.str() + `,"n":` + n + `}`
			meta := g.value(3)
			resp := ts.answer(t, alice, thread, paused.Elicitation.id(), `{"action":"accept","content":`+content+`,"_meta":{"example.com/v":`+meta+`}}`)
			mustStatus(t, ts.do(t, testRequest{method: http.MethodGet, path: "/v1/threads/" + thread + "/messages", as: alice}), http.StatusOK)
			if resp.Status != http.StatusOK {
				require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%s", resp.Body)
				_, rangeErr := strconv.ParseFloat(n, 64)
				assert.True(t, g.refusable || rangeErr != nil, "refused an answer chatd can keep: %s %s: %s", content, meta, resp.Body)
				continue
			}
			assert.False(t, g.refusable, "accepted an answer chatd cannot keep: %s %s", content, meta)
			history := ts.rawHistory(t, alice, thread)
			require.Len(t, history, 4)
			gotMeta := mustDecode[map[string]json.RawMessage](t, rawField(t, history[2], "_meta"))
			assert.Equal(t, canonical(t, []byte(meta)), canonical(t, gotMeta["example.com/v"]))
			record := mustDecode[map[string]json.RawMessage](t, gotMeta["drupal.org/ai.elicitation_result"])
			assert.Equal(t, canonical(t, []byte(content)), canonical(t, record["content"]))
		}
		t.Logf("%d turns accepted, %d refused", accepted, refused)
	})
}
