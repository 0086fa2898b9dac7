package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idemTurn is a turn request carrying an Idempotency-Key.
func idemTurn(thread, key, body string) testRequest {
	return testRequest{method: http.MethodPost, path: turnPath(thread), as: alice, body: []byte(body),
		header: http.Header{"Idempotency-Key": {key}}}
}

func TestIdempotency(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ts := newTestServer(t, withStoreKind(kind))

		t.Run("replay", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			const body = `{"message":"pay the invoice"}`
			first := ts.do(t, idemTurn(thread, "key-1", body))
			mustStatus(t, first, http.StatusOK)
			runs := ts.echo.runs.Load()

			again := ts.do(t, idemTurn(thread, "key-1", body))
			mustStatus(t, again, http.StatusOK)
			assert.JSONEq(t, string(first.Body), string(again.Body))
			assert.Equal(t, runs, ts.echo.runs.Load(), "the processor must not run again")
			assert.Len(t, ts.mustHistory(t, alice, thread), 2)

			// The replay is one turn.completed event when the retry streams.
			st := ts.mustStream(t, idemTurn(thread, "key-1", body))
			events := eventsOnly(st.readAll())
			require.Equal(t, []string{"turn.completed"}, eventNames(events))
			assert.Equal(t, "1", events[0].id)
			assert.JSONEq(t, string(first.Body), string(events[0].data))
			assert.Equal(t, runs, ts.echo.runs.Load())
			assert.Len(t, ts.mustHistory(t, alice, thread), 2)

			// Another key is another turn.
			other := ts.do(t, idemTurn(thread, "key-2", body))
			mustStatus(t, other, http.StatusOK)
			assert.NotEqual(t, mustDecode[wireTurnResult](t, first.Body).Message.ID, mustDecode[wireTurnResult](t, other.Body).Message.ID)
			assert.Len(t, ts.mustHistory(t, alice, thread), 4)
		})

		t.Run("conflict", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			mustStatus(t, ts.do(t, idemTurn(thread, "key-1", `{"message":"a"}`)), http.StatusOK)
			historyBefore := ts.mustHistoryRaw(t, alice, thread)
			mustProblem(t, ts.do(t, idemTurn(thread, "key-1", `{"message":"b"}`)), http.StatusUnprocessableEntity, "idempotency_conflict")
			// The same JSON written differently is another body.
			mustProblem(t, ts.do(t, idemTurn(thread, "key-1", `{ "message": "a" }`)), http.StatusUnprocessableEntity, "idempotency_conflict")
			assert.JSONEq(t, string(historyBefore), string(ts.mustHistoryRaw(t, alice, thread)))
		})

		t.Run("scoped to thread and principal", func(t *testing.T) {
			one := ts.mustCreateThread(t, alice, "echo")
			two := ts.mustCreateThread(t, alice, "echo")
			const body = `{"message":"same"}`
			a := ts.do(t, idemTurn(one, "shared", body))
			mustStatus(t, a, http.StatusOK)
			b := ts.do(t, idemTurn(two, "shared", body))
			mustStatus(t, b, http.StatusOK)
			assert.NotEqual(t, mustDecode[wireTurnResult](t, a.Body).Message.ID, mustDecode[wireTurnResult](t, b.Body).Message.ID)
			assert.Equal(t, two, mustDecode[wireTurnResult](t, b.Body).ThreadID)
			// Bob cannot replay alice's turn: her thread is not his.
			req := idemTurn(one, "shared", body)
			req.as = bob
			mustProblem(t, ts.do(t, req), http.StatusNotFound, "not_found")
		})

		t.Run("retry while running", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			const body = `{"message":"/slow 100 a b c d"}`
			st := ts.mustStream(t, idemTurn(thread, "slow-key", body))
			// message.start is sent once the turn holds the thread.
			require.Equal(t, "message.start", st.nextEvent().event)
			mustProblem(t, ts.do(t, idemTurn(thread, "slow-key", body)), http.StatusConflict, "thread_busy")

			var completed sseEvent
			for {
				ev := st.nextEvent()
				if ev.event != "text.delta" {
					completed = ev
					break
				}
			}
			require.Equal(t, "turn.completed", completed.event)
			retry := ts.do(t, idemTurn(thread, "slow-key", body))
			mustStatus(t, retry, http.StatusOK)
			assert.JSONEq(t, string(completed.data), string(retry.Body))
			assert.Len(t, ts.mustHistory(t, alice, thread), 2)
		})

		t.Run("paused turn", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "demo")
			const body = `{"message":"book"}`
			first := ts.do(t, idemTurn(thread, "book-key", body))
			mustStatus(t, first, http.StatusOK)
			eid := mustDecode[wireTurnResult](t, first.Body).Elicitation.id()
			// The retry replays the question rather than meeting it as a
			// pending elicitation.
			again := ts.do(t, idemTurn(thread, "book-key", body))
			mustStatus(t, again, http.StatusOK)
			assert.JSONEq(t, string(first.Body), string(again.Body))
			// Still once answered, still the original question.
			ts.mustAnswer(t, alice, thread, eid, map[string]any{"action": "decline"})
			again = ts.do(t, idemTurn(thread, "book-key", body))
			mustStatus(t, again, http.StatusOK)
			assert.JSONEq(t, string(first.Body), string(again.Body))
			assert.Len(t, ts.mustHistory(t, alice, thread), 4)
		})

		t.Run("failed turn is not remembered", func(t *testing.T) {
			thread := ts.mustCreateThread(t, alice, "echo")
			mustProblem(t, ts.do(t, idemTurn(thread, "fail-key", `{"message":"/fail"}`)), http.StatusBadGateway, "processor_failed")
			runs := ts.echo.runs.Load()
			// A retry of a failed turn runs it again: nothing was stored.
			mustProblem(t, ts.do(t, idemTurn(thread, "fail-key", `{"message":"/fail"}`)), http.StatusBadGateway, "processor_failed")
			assert.Equal(t, runs+1, ts.echo.runs.Load())
			assert.Empty(t, ts.mustHistory(t, alice, thread))
		})
	})
}
