package api

import (
	"errors"
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
	return s.follow(w, r, id, turnID, max(after, 0))
}

// follow streams a turn's logged events after the one with ID after, then
// its live ones until it ends. Errors found before the stream starts (no
// such thread or turn) are returned for a plain problem answer.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, threadID, turnID string, after int) error {
	var stream *sseStream
	err := s.engine.Follow(r.Context(), threadID, principalFrom(r.Context()), turnID, after, func(ev store.TurnEvent) {
		if stream == nil {
			stream = s.startStream(w)
		}
		data := ev.Data
		if ev.Name == turn.NameCompleted {
			data = s.renderResult(r, data)
		}
		stream.send(ev.ID, ev.Name, data)
	})
	if stream == nil {
		if err == nil {
			// Nothing after Last-Event-ID, and the turn has ended: an empty
			// stream says so.
			s.startStream(w).close()
		}
		return err
	}
	defer stream.close()
	if err != nil && !isClientGone(r, err) {
		// The log ended without a last event: the instance running the turn
		// died, and the lock it held has lapsed.
		stream.send(after+1, "error", encodeProblem(errTurnLost))
	}
	return nil
}

// errTurnLost ends a followed turn whose log expired before it ended.
var errTurnLost = &Error{Status: http.StatusBadGateway, Code: "processor_failed",
	Detail: "the instance running the turn stopped before it ended; nothing of it was saved",
	Err:    errors.New("turn log expired before its last event")}

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
