package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"chatd/internal/blocks"
	"chatd/internal/store"
	"chatd/internal/turn"

	"github.com/go-chi/chi/v5"
)

type regenerateRequest struct {
	// StopOnDisconnect is as in a turn body.
	StopOnDisconnect bool `json:"stop_on_disconnect"`
}

// handleRegenerate runs the processor again for the user message an
// assistant message replied to; the new reply is that message's sibling:
// POST /v1/threads/{thread_id}/messages/{message_id}/regenerate. It answers
// as a turn does (JSON or SSE, Idempotency-Key, the same 409s).
func (s *Server) handleRegenerate(w http.ResponseWriter, r *http.Request) error {
	c, err := readTurnCall(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, true)
	if err != nil {
		return err
	}
	var req regenerateRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeStrict(body, &req, regenerateShape); err != nil {
			return err
		}
	}
	principal, messageID := principalFrom(r.Context()), chi.URLParam(r, "message_id")
	t, err := s.engine.Regenerate(r.Context(), turn.Regenerate{
		ThreadID: c.threadID, Principal: principal, MessageID: messageID,
		// The message regenerated is part of the request an
		// Idempotency-Key stands for.
		IdempotencyKey: c.idemKey, Fingerprint: fingerprintOf(append([]byte(messageID+"\n"), body...)),
		Stream: c.stream, StopOnDisconnect: req.StopOnDisconnect,
	})
	if errors.Is(err, store.ErrMessageNotFound) {
		return errorf(http.StatusNotFound, "not_found", "message not found in this thread")
	}
	return s.answerTurn(w, r, c, principal, t, err)
}

// parseParentID reads a turn body's parent_id: absent (nil: the head),
// null ("": a new first message) or a message ID, which the engine checks.
func parseParentID(raw json.RawMessage) (*string, error) {
	if raw == nil {
		return nil, nil
	}
	parent := ""
	if string(raw) != "null" && json.Unmarshal(raw, &parent) != nil {
		return nil, badShape(turnShape, "parent_id: must be a message ID or null")
	}
	return &parent, nil
}

// parseHeadID reads a PATCH body's head_id: a message ID of the thread.
func parseHeadID(raw json.RawMessage) (string, error) {
	if raw == nil {
		return "", nil
	}
	var head string
	if json.Unmarshal(raw, &head) != nil {
		return "", badShape(patchShape, "head_id: must be a message ID")
	}
	if !blocks.IsCanonicalID(head) {
		return "", headError()
	}
	return head, nil
}

func headError() error {
	verr := &blocks.ValidationError{}
	verr.Add("head_id", "names no message of the thread")
	return verr
}

// siblingsView is a history message's alternatives.
type siblingsView struct {
	Index int      `json:"index"`
	IDs   []string `json:"ids"`
}

// withSiblings adds each message's siblings, where it has any, to its JSON.
func withSiblings(msgs []json.RawMessage, page store.Page) ([]json.RawMessage, error) {
	if len(page.Siblings) == 0 {
		return msgs, nil
	}
	for i, m := range page.Messages {
		sib, ok := page.Siblings[m.ID]
		if !ok {
			continue
		}
		member, err := json.Marshal(siblingsView{Index: sib.Index, IDs: sib.IDs})
		if err != nil {
			return nil, err
		}
		raw := bytes.TrimRight(msgs[i], " \n")
		out := make([]byte, 0, len(raw)+len(member)+13)
		out = append(out, raw[:len(raw)-1]...)
		out = append(out, `,"siblings":`...)
		out = append(out, member...)
		msgs[i] = append(out, '}')
	}
	return msgs, nil
}

// plainMessages is each message's JSON.
func plainMessages(msgs []blocks.Message) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		b, err := m.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// editedParent is the parent of the user message id names, when the thread
// holds it: a protocol's message carrying that ID edits it, and the edit
// is its sibling. It is nil (the head) for an ID history does not hold, such
// as one the client made up.
func (s *Server) editedParent(r *http.Request, threadID, id string) *string {
	if !blocks.IsCanonicalID(threadID) || !blocks.IsCanonicalID(id) {
		return nil
	}
	page, err := s.store.HistoryOf(r.Context(), threadID, principalFrom(r.Context()), store.PageRequest{Limit: 1, Leaf: id})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].Role != blocks.RoleUser {
		return nil
	}
	return &page.Messages[0].ParentID
}

// beginProtocolRegenerate begins a protocol's regenerate of messageID, or
// of the thread's head when it is empty, with the native turn's
// idempotency (keyed on the whole body).
func (s *Server) beginProtocolRegenerate(r *http.Request, threadID, messageID, idemKey string, body []byte, stopOnDisconnect bool) (*turn.Turn, error) {
	if !blocks.IsCanonicalID(threadID) {
		return nil, store.ErrNotFound
	}
	principal := principalFrom(r.Context())
	if messageID == "" {
		thread, _, err := s.store.GetThread(r.Context(), threadID, principal)
		if err != nil {
			return nil, err
		}
		messageID = thread.HeadID
	}
	return s.engine.Regenerate(r.Context(), turn.Regenerate{
		ThreadID: threadID, Principal: principal, MessageID: messageID,
		IdempotencyKey: idemKey, Fingerprint: fingerprintOf(body), Stream: true, StopOnDisconnect: stopOnDisconnect,
	})
}
