package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"chatd/internal/blocks"
	"chatd/internal/store"

	"github.com/go-chi/chi/v5"
)

// threadView is a Thread on the wire.
type threadView struct {
	ID                 string            `json:"id"`
	Processor          string            `json:"processor"`
	CreatedAt          blocks.Timestamp  `json:"created_at"`
	UpdatedAt          blocks.Timestamp  `json:"updated_at"`
	Title              *string           `json:"title"`
	Metadata           map[string]string `json:"metadata"`
	RunningTurn        *runningTurnView  `json:"running_turn"`
	PendingElicitation json.RawMessage   `json:"pending_elicitation"`
	PendingExpiresAt   *blocks.Timestamp `json:"pending_expires_at"`
	HeadID             *string           `json:"head_id"`
}

type runningTurnView struct {
	ID        string           `json:"id"`
	StartedAt blocks.Timestamp `json:"started_at"`
}

func newThreadView(t store.Thread, p *store.Pending) threadView {
	v := threadView{ID: t.ID, Processor: t.Processor, Title: t.Title, Metadata: t.Metadata,
		CreatedAt: blocks.Timestamp(t.CreatedAt), UpdatedAt: blocks.Timestamp(t.UpdatedAt)}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	if t.HeadID != "" {
		v.HeadID = &t.HeadID
	}
	if t.Running != nil {
		v.RunningTurn = &runningTurnView{ID: t.Running.ID, StartedAt: blocks.Timestamp(t.Running.StartedAt)}
	}
	if p != nil {
		v.PendingElicitation, v.PendingExpiresAt = p.Request, blocks.Stamp(p.ExpiresAt)
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

// History page bounds (openapi.yaml documents them).
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
	leaf := ""
	if raw, ok := q["leaf"]; ok {
		if len(raw) != 1 || !blocks.IsCanonicalID(raw[0]) {
			return errorf(http.StatusBadRequest, "invalid_request", "leaf: must be a message ID")
		}
		leaf = raw[0]
	}
	asHTML, err := wantsHTML(r)
	if err != nil {
		return err
	}
	page, err := s.store.HistoryOf(r.Context(), id, principalFrom(r.Context()), store.PageRequest{Limit: limit, Before: before, Leaf: leaf})
	if errors.Is(err, store.ErrUnknownCursor) && leaf != "" {
		return errorf(http.StatusBadRequest, "invalid_request", "before or leaf: no such message in this thread")
	}
	if err != nil {
		return err
	}
	view := struct {
		Messages   []json.RawMessage `json:"messages"`
		NextBefore *string           `json:"next_before"`
	}{}
	if asHTML {
		view.Messages, err = s.renderedMessages(page.Messages)
	} else {
		view.Messages, err = plainMessages(page.Messages)
	}
	if err != nil {
		return err
	}
	if view.Messages, err = withSiblings(view.Messages, page); err != nil {
		return err
	}
	if page.NextBefore != "" {
		view.NextBefore = &page.NextBefore
	}
	return writeJSON(w, http.StatusOK, jsonType, view)
}

// Thread list page bounds (openapi.yaml documents them).
const (
	defaultThreadLimit = 20
	maxThreadLimit     = 100
)

// handleListThreads lists the caller's threads, most recently updated
// first: GET /v1/threads?limit&before.
func (s *Server) handleListThreads(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := defaultThreadLimit
	if raw, ok := q["limit"]; ok {
		n, err := strconv.Atoi(raw[0])
		if len(raw) != 1 || err != nil || n < 1 || n > maxThreadLimit {
			return errorf(http.StatusBadRequest, "invalid_request", "limit: must be an integer from 1 to %d", maxThreadLimit)
		}
		limit = n
	}
	cursor := ""
	if raw, ok := q["before"]; ok {
		if len(raw) != 1 || raw[0] == "" {
			return errorf(http.StatusBadRequest, "invalid_request", "before: must be the next_before of a previous page")
		}
		cursor = raw[0]
	}
	list, err := s.store.ListThreads(r.Context(), principalFrom(r.Context()), limit, cursor)
	if errors.Is(err, store.ErrUnknownCursor) {
		return errorf(http.StatusBadRequest, "invalid_request", "before: must be the next_before of a previous page")
	}
	if err != nil {
		return err
	}
	view := struct {
		Threads    []threadView `json:"threads"`
		NextBefore *string      `json:"next_before"`
	}{Threads: make([]threadView, 0, len(list.Threads))}
	for _, st := range list.Threads {
		v := newThreadView(st.Thread, st.Pending)
		if v.Title == nil && st.Thread.Preview != "" {
			// Lists show a thread with no title by its first words.
			preview := st.Thread.Preview
			v.Title = &preview
		}
		view.Threads = append(view.Threads, v)
	}
	if list.Next != "" {
		view.NextBefore = &list.Next
	}
	return writeJSON(w, http.StatusOK, jsonType, view)
}

// threadPatch is a PATCH body: an RFC 7396 merge patch of a thread's title
// and metadata. Raw members tell an absent member from a null one.
type threadPatch struct {
	Title    json.RawMessage `json:"title"`
	Metadata json.RawMessage `json:"metadata"`
	HeadID   json.RawMessage `json:"head_id"`
}

// Bounds of a title (docs/decisions.md says why).
const maxTitleRunes = 200

// handleUpdateThread sets a thread's title and metadata:
// PATCH /v1/threads/{thread_id}.
func (s *Server) handleUpdateThread(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, false)
	if err != nil {
		return err
	}
	var req threadPatch
	if err := decodeStrict(body, &req, patchShape); err != nil {
		return err
	}
	patch, err := parseThreadPatch(req)
	if err != nil {
		return err
	}
	if patch.Head, err = parseHeadID(req.HeadID); err != nil {
		return err
	}
	t, err := s.store.UpdateThread(r.Context(), id, principalFrom(r.Context()), patch)
	if errors.Is(err, store.ErrMessageNotFound) {
		return headError()
	}
	if errors.Is(err, store.ErrMetadataTooLarge) {
		verr := &blocks.ValidationError{}
		verr.Add("metadata", fmt.Sprintf("at most %d keys and %d bytes of JSON once merged", store.MaxMetadataKeys, store.MaxMetadataBytes))
		return verr
	}
	if err != nil {
		return err
	}
	_, pending, err := s.store.GetThread(r.Context(), id, principalFrom(r.Context()))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, jsonType, newThreadView(t, pending))
}

// parseThreadPatch checks a patch's members: title a string or null,
// metadata an object of strings or nulls (null deletes the key).
func parseThreadPatch(req threadPatch) (store.ThreadPatch, error) {
	var patch store.ThreadPatch
	verr := &blocks.ValidationError{}
	if req.Title != nil {
		patch.SetTitle = true
		if string(req.Title) != "null" {
			var title string
			if json.Unmarshal(req.Title, &title) != nil {
				return patch, errorf(http.StatusBadRequest, "invalid_request", "title: must be a string or null")
			}
			if n := utf8.RuneCountInString(title); n == 0 || n > maxTitleRunes {
				verr.Add("title", fmt.Sprintf("must be 1 to %d characters (null clears it)", maxTitleRunes))
			}
			patch.Title = &title
		}
	}
	if req.Metadata != nil && string(req.Metadata) != "null" {
		if err := json.Unmarshal(req.Metadata, &patch.Metadata); err != nil {
			return patch, errorf(http.StatusBadRequest, "invalid_request", "metadata: must be an object of string values (null deletes a key)")
		}
		for k := range patch.Metadata {
			if k == "" || len(k) > 64 {
				verr.Add("metadata", "keys must be 1 to 64 bytes")
				break
			}
		}
	} else if req.Metadata != nil {
		// "metadata": null removes every key, as a merge patch says.
		patch.Metadata = map[string]*string{}
		patch.ClearMetadata = true
	}
	return patch, verr.Err()
}
