package api

import (
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"chatd/internal/blocks"
	"chatd/internal/protocol"
	"chatd/internal/protocol/deepchat"
	"chatd/internal/render"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// deep-chat's endpoints answer every error as {"error": "<detail>"} in
// application/json: the element reads no problem+json. writeError picks
// that shape for any request under deepChatPrefix, including those refused
// before a handler runs (authentication, an unknown method).
const deepChatPrefix = "/v1/deep-chat"

func isDeepChat(r *http.Request) bool {
	return r.URL.Path == deepChatPrefix || strings.HasPrefix(r.URL.Path, deepChatPrefix+"/")
}

// deepChatError is a problem as deep-chat shows it: its detail, then any
// field errors.
func deepChatError(p Problem) string {
	text := p.Detail
	for i, fe := range p.Errors {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		text += sep + fe.Field + ": " + fe.Detail
	}
	return text
}

// chatSink writes a turn as deep-chat stream events.
type chatSink struct{ *deepchat.Stream }

func (c chatSink) Failed(p Problem) { c.Error(deepChatError(p)) }

// handleDeepChat runs a turn for the deep-chat web component: POST
// /v1/deep-chat. A message equal to a button title of the thread's pending
// question answers it; any other message while one is pending is a 409.
func (s *Server) handleDeepChat(w http.ResponseWriter, r *http.Request) error {
	req, err := s.readDeepChat(w, r)
	if err != nil {
		return err
	}
	if err := s.checkAttachments(req.Blocks); err != nil {
		return err
	}
	if err := s.storeUploads(r.Context(), req.ThreadID, req.Blocks, req.Uploads); err != nil {
		return err
	}
	req.Stream = wantsStream(r)
	t, err := s.beginProtocolTurn(r, req.ThreadID, req.Text, req.Blocks, "", nil,
		protocolTurn{stopOnDisconnect: req.Stream})
	var pending *store.PendingError
	if errors.As(err, &pending) {
		t, err = s.beginChoice(r, req, pending)
	}
	if err != nil {
		return err
	}
	events := t.Events(r.Context(), -1)
	if !req.Stream {
		return s.writeDeepChatJSON(w, r, events)
	}
	stream := s.startStream(w)
	defer stream.close()
	s.writeProtocol(r, chatSink{deepchat.NewStream(stream.sendData, s.renderer)}, events)
	return nil
}

// beginChoice answers the pending question with the message when it is one
// of the question's button titles.
func (s *Server) beginChoice(r *http.Request, req deepchat.Request, pending *store.PendingError) (*turn.Turn, error) {
	choices := deepchat.Choices(pending.Pending.Request)
	choice, ok := deepchat.Match(choices, req.Text)
	if !ok || len(req.Blocks) > 0 {
		if len(choices) == 0 {
			return nil, errorf(http.StatusConflict, "elicitation_pending", "the thread is waiting for the answer to its question: answer its form first")
		}
		titles := make([]string, len(choices))
		for i, c := range choices {
			titles[i] = fmt.Sprintf("%q", c.Title)
		}
		return nil, errorf(http.StatusConflict, "elicitation_pending", "the thread is waiting for the answer to its question: answer %s", strings.Join(titles, " or "))
	}
	return s.beginAnswer(r, req.ThreadID, &protocol.Answer{ElicitationID: pending.Pending.ElicitationID, Result: choice.Result}, req.Stream)
}

// readDeepChat reads deep-chat's body: JSON, or multipart when it sends
// files.
func (s *Server) readDeepChat(w http.ResponseWriter, r *http.Request) (deepchat.Request, error) {
	mediaType, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "multipart/form-data" {
		body, err := s.readBody(w, r, false)
		if err != nil {
			return deepchat.Request{}, err
		}
		req, err := deepchat.DecodeJSON(body)
		return req, protocolError(err)
	}
	if params["boundary"] == "" {
		return deepchat.Request{}, errorf(http.StatusBadRequest, "invalid_request", "multipart body without a boundary")
	}
	// Files are held to CHATD_MAX_FILE_BYTES, the rest to CHATD_MAX_BODY_BYTES.
	limit := s.cfg.MaxBodyBytes + s.cfg.MaxFileBytes
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	req, err := deepchat.DecodeMultipart(multipart.NewReader(r.Body, params["boundary"]), s.cfg.MaxFileBytes, s.cfg.MaxBodyBytes)
	var tooBig *http.MaxBytesError
	var partTooBig *deepchat.TooLargeError
	switch {
	case errors.As(err, &tooBig):
		return req, errorf(http.StatusRequestEntityTooLarge, "payload_too_large", "request body exceeds %d bytes", limit)
	case errors.As(err, &partTooBig):
		return req, errorf(http.StatusRequestEntityTooLarge, "payload_too_large", "%s", partTooBig.Error())
	}
	return req, protocolError(err)
}

// writeDeepChatJSON answers with the reply rendered: {"html"}.
func (s *Server) writeDeepChatJSON(w http.ResponseWriter, r *http.Request, events turnEvents) error {
	var last turn.Event
	for ev, err := range events {
		if err != nil {
			return err
		}
		last = ev
	}
	if last.Kind == turn.EventError {
		return last.Failure
	}
	if r.Context().Err() != nil {
		return errClientGone
	}
	out, err := deepchat.Reply(s.renderer, last.Result)
	if err != nil {
		return fmt.Errorf("rendering a deep-chat reply: %w", err)
	}
	return writeJSON(w, http.StatusOK, jsonType, deepchat.Answer{HTML: out})
}

// deepChatItem is one message of deep-chat's history.
type deepChatItem struct {
	Role string `json:"role"`
	HTML string `json:"html"`
}

// handleDeepChatHistory lists the thread's messages for deep-chat's
// history: GET /v1/deep-chat/history?thread_id=. The pending question, if
// any, is shown in the message that asks it, the last.
func (s *Server) handleDeepChatHistory(w http.ResponseWriter, r *http.Request) error {
	ids := r.URL.Query()["thread_id"]
	if len(ids) != 1 || ids[0] == "" {
		return errorf(http.StatusBadRequest, "invalid_request", "thread_id: required (the chatd thread ID)")
	}
	id := ids[0]
	if !blocks.IsCanonicalID(id) {
		return store.ErrNotFound
	}
	principal := principalFrom(r.Context())
	_, pending, err := s.store.GetThread(r.Context(), id, principal)
	if err != nil {
		return err
	}
	var msgs []blocks.Message
	before := ""
	for {
		page, err := s.store.History(r.Context(), id, principal, maxPageLimit, before)
		if err != nil {
			return err
		}
		msgs = append(page.Messages, msgs...)
		if page.NextBefore == "" {
			break
		}
		before = page.NextBefore
	}
	items := make([]deepChatItem, 0, len(msgs))
	for i, m := range msgs {
		item := deepChatItem{Role: "user"}
		if m.Role != blocks.RoleUser {
			item.Role = "ai"
		}
		var q *render.Question
		if pending != nil && i == len(msgs)-1 && m.Role == blocks.RoleAssistant {
			q = deepchat.Question(pending.Request)
		}
		if item.HTML, err = s.renderer.DeepChat(m, q); err != nil {
			return fmt.Errorf("rendering deep-chat history: %w", err)
		}
		items = append(items, item)
	}
	return writeJSON(w, http.StatusOK, jsonType, items)
}

// handleDeepChatScript serves chatd.js: GET /deep-chat/chatd.js.
func handleDeepChatScript(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	writeBody(w, http.StatusOK, "text/javascript; charset=utf-8", deepchat.Script)
}
