package api

import (
	"net/http"
	"strconv"

	"chatd/internal/blocks"
	"chatd/internal/store"
	"chatd/internal/turn"

	"github.com/go-chi/chi/v5"
)

// handleTurnEvents replays a turn's events and follows it live:
// GET /v1/threads/{thread_id}/turns/{turn_id}/events.
func (s *Server) handleTurnEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	turnID := chi.URLParam(r, "turn_id")
	if !blocks.IsCanonicalID(turnID) {
		return store.ErrTurnNotFound
	}
	after, err := lastEventID(r)
	if err != nil {
		return err
	}
	if _, err := wantsHTML(r); err != nil {
		return err
	}
	ref := turn.Ref{ThreadID: id, Principal: principalFrom(r.Context()), TurnID: turnID}
	return s.writeTurnSSE(w, r, s.engine.Events(r.Context(), ref, max(after, 0)))
}

// lastEventID is the Last-Event-ID header as an event ID, or -1 when it is
// absent.
func lastEventID(r *http.Request) (int, error) {
	values := r.Header.Values("Last-Event-ID")
	if len(values) == 0 {
		return -1, nil
	}
	n, err := strconv.Atoi(values[0])
	if len(values) > 1 || err != nil || n < 0 {
		return 0, errorf(http.StatusBadRequest, "invalid_request", "Last-Event-ID: must be the ID of an event of this turn (a whole number)")
	}
	return n, nil
}
