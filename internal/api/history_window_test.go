package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"chatd/internal/processor"
	"chatd/internal/turn"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// historian replies with the JSON array of the texts in its history window,
// so a test sees exactly what chatd handed the processor.
type historian struct{}

func (historian) Describe() string { return "replies with the texts of its history window" }

func (historian) Process(_ context.Context, in processor.Input, _ processor.Emit) (processor.Output, error) {
	msgs, err := in.History.Decode()
	if err != nil {
		return processor.Output{}, err
	}
	texts := []string{}
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	out, err := json.Marshal(texts)
	return processor.Output{Text: string(out)}, err
}

// shortHistorian reads one message of history at most.
type shortHistorian struct{ historian }

func (shortHistorian) HistoryWindow() int { return 1 }

func TestProcessorsGetTheirHistoryWindow(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind),
			withProcessor("historian", historian{}), withProcessor("short", shortHistorian{}),
			withTurnConfig(func(c *turn.Config) { c.HistoryWindow = 3 }))

		for _, name := range []string{"historian", "short"} {
			t.Run(name, func(t *testing.T) {
				thread := ts.mustCreateThread(t, alice, name)
				assert.Equal(t, "[]", ts.mustTurn(t, alice, thread, "a").Message.Message, "a new thread has no history")
				second := ts.mustTurn(t, alice, thread, "b").Message.Message
				third := ts.mustTurn(t, alice, thread, "c").Message.Message
				var got []string
				require.NoError(t, json.Unmarshal([]byte(third), &got))
				switch name {
				case "historian":
					// The configured window of 3: the newest three messages
					// before "c", oldest first.
					assert.Equal(t, []string{"[]", "b", second}, got)
				case "short":
					assert.Equal(t, []string{second}, got, "a processor that reads one message gets one")
				}
			})
		}
	})
}
