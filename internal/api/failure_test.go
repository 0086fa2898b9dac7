package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"chatd/internal/turn"
)

// TestProcessorFailure checks that a failing or timed-out processor fails
// the turn with 502, keeps nothing of it and leaves the thread usable.
func TestProcessorFailure(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		// Only the turn that must time out runs with a short timeout; every
		// other turn gets the default, so none races the machine's pace.
		st := newTestStore(t, kind)
		ts := newTestServer(t, withStore(st))
		short := newTestServer(t, withStore(st), withTurnConfig(func(c *turn.Config) {
			c.TurnTimeout = 300 * time.Millisecond
		}))
		tests := []struct {
			name    string
			message string
		}{
			{"error", "/fail"},
			{"timeout", "/slow 1000 a b c"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				thread := ts.mustCreateThread(t, alice, "echo")
				ts.mustTurn(t, alice, thread, "before")
				threadBefore := ts.mustThreadRaw(t, alice, thread)
				historyBefore := ts.mustHistoryRaw(t, alice, thread)

				p := mustProblem(t, short.postTurn(t, alice, thread, tt.message), http.StatusBadGateway, "processor_failed")
				assert.NotContains(t, p.Detail, "echo:", "the processor's own error is not shown to clients")

				assert.JSONEq(t, string(historyBefore), string(ts.mustHistoryRaw(t, alice, thread)))
				assert.JSONEq(t, string(threadBefore), string(ts.mustThreadRaw(t, alice, thread)))
				// The lock was released: the next turn runs at once.
				res := ts.mustTurn(t, alice, thread, "after")
				assert.Equal(t, "after", res.Message.Message)
				assert.Len(t, ts.mustHistory(t, alice, thread), 4)
			})
		}

		t.Run("confirm answered without content", func(t *testing.T) {
			// A confirm dialog (no properties) posts accept with no content;
			// echo answers with the result it received.
			thread := ts.mustCreateThread(t, alice, "echo")
			eid := ts.mustPause(t, alice, thread, `/elicit {"message":"ok?","requestedSchema":{"type":"object","properties":{}}}`).Elicitation.id()
			historyBefore := ts.mustHistoryRaw(t, alice, thread)
			res := ts.mustAnswer(t, alice, thread, eid, map[string]any{"action": "accept"})
			assert.Equal(t, `{"action":"accept"}`, res.Message.Message)
			assert.NotEqual(t, string(historyBefore), string(ts.mustHistoryRaw(t, alice, thread)))
		})
	})
}
