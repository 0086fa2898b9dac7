package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"chatd/internal/blocks"
	"chatd/internal/store"

	"github.com/go-chi/chi/v5"
)

// threadView is a Thread on the wire.
type threadView struct {
	ID                 string          `json:"id"`
	Processor          string          `json:"processor"`
	CreatedAt          timestamp       `json:"created_at"`
	UpdatedAt          timestamp       `json:"updated_at"`
	PendingElicitation json.RawMessage `json:"pending_elicitation"`
	PendingExpiresAt   *timestamp      `json:"pending_expires_at"`
}

func newThreadView(t store.Thread, p *store.Pending) threadView {
	v := threadView{ID: t.ID, Processor: t.Processor, CreatedAt: timestamp(t.CreatedAt), UpdatedAt: timestamp(t.UpdatedAt)}
	if p != nil {
		v.PendingElicitation, v.PendingExpiresAt = p.Request, stamp(p.ExpiresAt)
	}
	return v
}

// threadID returns the path's thread ID; a malformed one names no thread.
func threadID(r *http.Request) (string, error) {
	id := chi.URLParam(r, "thread_id")
	if !blocks.IsCanonicalID(id) {
		return "", errorf(http.StatusNotFound, "not_found", "thread not found")
	}
	return id, nil
}

func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, jsonType, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.Ping(r.Context()); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, jsonType, map[string]string{"status": "ok"})
}

func (s *Server) handleListProcessors(w http.ResponseWriter, _ *http.Request) error {
	type entry struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	list := struct {
		Processors []entry `json:"processors"`
		Default    string  `json:"default"`
	}{Processors: []entry{}, Default: s.processors.Default()}
	for _, name := range s.processors.Names() {
		p, _ := s.processors.Get(name)
		list.Processors = append(list.Processors, entry{Name: name, Description: p.Describe()})
	}
	return writeJSON(w, http.StatusOK, jsonType, list)
}

func (s *Server) handleCreateThread(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r, true)
	if err != nil {
		return err
	}
	var req struct {
		Processor *string `json:"processor"`
	}
	if body != nil {
		if err := decodeStrict(body, &req, threadShape); err != nil {
			return err
		}
	}
	name := s.processors.Default()
	if req.Processor != nil {
		name = *req.Processor
		if _, err := s.processors.Get(name); err != nil {
			verr := &blocks.ValidationError{}
			verr.Add("processor", "unknown processor; GET /v1/processors lists the enabled ones")
			return verr
		}
	}
	now := blocks.Now()
	t := store.Thread{ID: blocks.NewID(), Owner: principalFrom(r.Context()), Processor: name, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateThread(r.Context(), t); err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/threads/"+t.ID)
	return writeJSON(w, http.StatusCreated, jsonType, newThreadView(t, nil))
}

func (s *Server) handleGetThread(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	t, pending, err := s.store.GetThread(r.Context(), id, principalFrom(r.Context()))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, jsonType, newThreadView(t, pending))
}

func (s *Server) handleDeleteThread(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	if err := s.store.DeleteThread(r.Context(), id, principalFrom(r.Context())); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// History page bounds of SPEC §3.
const (
	defaultPageLimit = 50
	maxPageLimit     = 200
)

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit := defaultPageLimit
	if raw, ok := q["limit"]; ok {
		n, err := strconv.Atoi(raw[0])
		if len(raw) != 1 || err != nil || n < 1 || n > maxPageLimit {
			return errorf(http.StatusBadRequest, "invalid_request", "limit: must be an integer from 1 to %d", maxPageLimit)
		}
		limit = n
	}
	before := ""
	if raw, ok := q["before"]; ok {
		if len(raw) != 1 || !blocks.IsCanonicalID(raw[0]) {
			return errorf(http.StatusBadRequest, "invalid_request", "before: must be a message ID")
		}
		before = raw[0]
	}
	asHTML, err := wantsHTML(r)
	if err != nil {
		return err
	}
	page, err := s.store.History(r.Context(), id, principalFrom(r.Context()), limit, before)
	if err != nil {
		return err
	}
	view := struct {
		Messages   any     `json:"messages"`
		NextBefore *string `json:"next_before"`
	}{Messages: page.Messages}
	if page.Messages == nil {
		view.Messages = []blocks.Message{}
	}
	if asHTML {
		if view.Messages, err = s.renderedMessages(page.Messages); err != nil {
			return err
		}
	}
	if page.NextBefore != "" {
		view.NextBefore = &page.NextBefore
	}
	return writeJSON(w, http.StatusOK, jsonType, view)
}
