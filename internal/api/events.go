package api

import (
	"iter"
	"net/http"

	"chatd/internal/turn"
)

// The transports of a turn are writers over one input: the turn's events
// as internal/turn gives them, live, from its log or replayed. Each writer
// here, and each frontend protocol's in protocols.go, ranges over them once.

// turnEvents is a turn's events, as internal/turn reads them.
type turnEvents = iter.Seq2[turn.Event, error]

// writeTurnJSON answers with the turn's last event: its TurnResult, or its
// failure as a problem. A client that left before the answer is logged and
// counted as 499; the turn is saved all the same.
func (s *Server) writeTurnJSON(w http.ResponseWriter, r *http.Request, events turnEvents) error {
	var last turn.Event
	for ev, err := range events {
		if err != nil {
			return err
		}
		last = ev
	}
	gone := r.Context().Err() != nil
	switch {
	case last.Kind == turn.EventError && !gone:
		return last.Failure
	case last.Kind == turn.EventError:
		s.observeFailure(r, last.Failure)
		return errClientGone
	case gone:
		return errClientGone
	}
	writeBody(w, http.StatusOK, jsonType, s.resultJSON(r, last))
	return nil
}

// writeTurnSSE streams the turn's events as Server-Sent Events, each with
// its ID. An error before the first event (no such thread or turn) is
// returned for a plain problem answer; once the stream has started, an
// error only says the client left.
func (s *Server) writeTurnSSE(w http.ResponseWriter, r *http.Request, events turnEvents) error {
	var stream *sseStream
	for ev, err := range events {
		if err != nil {
			if stream == nil {
				return err
			}
			break
		}
		if stream == nil {
			stream = s.startStream(w)
			defer stream.close()
		}
		stream.send(ev.ID, ev.Name(), s.eventData(r, ev))
	}
	if stream == nil {
		// Nothing after Last-Event-ID, and the turn has ended: an empty
		// stream says so.
		s.startStream(w).close()
	}
	return nil
}

// eventData is an event's SSE data: a TurnResult rendered when asked for,
// a failure as the problem the client sees, the rest as the turn gave it.
func (s *Server) eventData(r *http.Request, ev turn.Event) []byte {
	switch ev.Kind {
	case turn.EventCompleted:
		return s.resultJSON(r, ev)
	case turn.EventError:
		s.observeFailure(r, ev.Failure)
		body, err := marshal(problemFor(ev.Failure))
		if err != nil {
			return []byte(internalProblem)
		}
		return body
	}
	return ev.Data()
}

// observeFailure logs and counts a turn's failure where it happened: a
// failure read back from a turn's log has no cause, and was logged by the
// instance that ran the turn.
func (s *Server) observeFailure(r *http.Request, f *turn.Failure) {
	if f.Err != nil {
		s.observeError(r, problemFor(f), f)
	}
}
