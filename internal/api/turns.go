package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/store"
	"chatd/internal/turn"

	"github.com/go-chi/chi/v5"
)

type turnRequest struct {
	Message       *string         `json:"message"`
	ContentBlocks json.RawMessage `json:"content_blocks"`
	Meta          map[string]any  `json:"_meta"`
	// StopOnDisconnect stops the turn if the client goes away before it
	// ends, instead of letting it run on to be reattached to.
	StopOnDisconnect bool `json:"stop_on_disconnect"`
	// CancelPending first cancels the thread's pending question, as an
	// answered cancel, instead of refusing the turn with 409.
	CancelPending bool `json:"cancel_pending"`
	// ParentID is the message the user's message follows (raw, to tell
	// an absent member from null).
	ParentID json.RawMessage `json:"parent_id"`
}

// turnInput is what a turn body asks for.
type turnInput struct {
	message          blocks.Message
	stopOnDisconnect bool
	cancelPending    bool
	parent           *string
}

// handleTurn runs a plain turn: POST /v1/threads/{thread_id}/turns.
func (s *Server) handleTurn(w http.ResponseWriter, r *http.Request) error {
	c, err := readTurnCall(r)
	if err != nil {
		return err
	}
	id := c.threadID
	body, err := s.readBody(w, r, false)
	if err != nil {
		return err
	}
	in, err := parseTurnRequest(body, s.cfg.MaxBlocks)
	if err != nil {
		return err
	}
	principal := principalFrom(r.Context())
	if err := s.checkFileLinks(r.Context(), id, principal, in.message.ContentBlocks, "content_blocks"); err != nil {
		return err
	}
	t, err := s.engine.Begin(r.Context(), turn.Plain{
		ThreadID: id, Principal: principal, Message: in.message,
		IdempotencyKey: c.idemKey, Fingerprint: fingerprintOf(body), Stream: c.stream,
		StopOnDisconnect: in.stopOnDisconnect, CancelPending: in.cancelPending, Parent: in.parent,
	})
	return s.answerTurn(w, r, c, principal, t, err)
}

// turnCall is what the URL and headers of a request that runs a turn (a
// turn, a regenerate) say.
type turnCall struct {
	threadID, idemKey string
	lastEventID       int // -1 without Last-Event-ID
	stream            bool
}

func readTurnCall(r *http.Request) (turnCall, error) {
	id, err := threadID(r)
	if err != nil {
		return turnCall{}, err
	}
	idemKey, err := idempotencyKey(r)
	if err != nil {
		return turnCall{}, err
	}
	if _, err := wantsHTML(r); err != nil {
		return turnCall{}, err
	}
	after, err := lastEventID(r)
	if err != nil {
		return turnCall{}, err
	}
	return turnCall{threadID: id, idemKey: idemKey, lastEventID: after, stream: wantsStream(r)}, nil
}

// answerTurn writes the turn begun for c (err from its begin), as JSON or
// SSE; a broken stream's retry that finds its turn still running follows
// that turn instead.
func (s *Server) answerTurn(w http.ResponseWriter, r *http.Request, c turnCall, principal string, t *turn.Turn, err error) error {
	var running *store.RunningError
	if errors.As(err, &running) && c.lastEventID >= 0 && c.stream {
		ref := turn.Ref{ThreadID: c.threadID, Principal: principal, TurnID: running.TurnID}
		return s.writeTurnSSE(w, r, s.engine.Events(r.Context(), ref, c.lastEventID))
	}
	if err != nil {
		return err
	}
	if !c.stream {
		return s.writeTurnJSON(w, r, t.Events(r.Context(), -1))
	}
	return s.writeTurnSSE(w, r, t.Events(r.Context(), c.lastEventID))
}

// parseTurnRequest validates a turn body into the user's message and what
// the turn asks for. Shape
// errors are 400; more than maxBlocks blocks, invalid blocks and _meta keys,
// and values chatd could not give back exactly (blocks.CheckExact), are 422
// with every path.
func parseTurnRequest(body []byte, maxBlocks int) (turnInput, error) {
	var req turnRequest
	if err := decodeStrict(body, &req, turnShape); err != nil {
		return turnInput{}, err
	}
	if req.Message == nil {
		return turnInput{}, badShape(turnShape, "message: required")
	}
	var list []blocks.ContentBlock
	verr := &blocks.ValidationError{}
	verr.Merge(blocks.CheckExact(body))
	if raw := strings.TrimSpace(string(req.ContentBlocks)); raw != "" && raw != "null" {
		if raw[0] != '[' {
			return turnInput{}, badShape(turnShape, "content_blocks: must be an array of content blocks")
		}
		if n := arrayLen(req.ContentBlocks); n > maxBlocks {
			verr.Add("content_blocks", fmt.Sprintf("%d content blocks; at most %d are allowed per message", n, maxBlocks))
			return turnInput{}, verr
		}
		decoded, err := blocks.DecodeList(req.ContentBlocks, "content_blocks")
		verr.Merge(err)
		list = decoded
	}
	verr.Merge(validateClientMeta(req.Meta))
	if err := verr.Err(); err != nil {
		return turnInput{}, err
	}
	if *req.Message == "" && len(list) == 0 {
		return turnInput{}, badShape(turnShape, "message: must not be empty unless content_blocks are given")
	}
	parent, err := parseParentID(req.ParentID)
	if err != nil {
		return turnInput{}, err
	}
	return turnInput{
		message:          blocks.NewMessage(blocks.RoleUser, *req.Message, list, req.Meta),
		stopOnDisconnect: req.StopOnDisconnect, cancelPending: req.CancelPending, parent: parent,
	}, nil
}

// validateClientMeta checks a client's _meta: the key grammar, and none of
// the keys chatd alone writes (blocks.IsRecordKey, in any letter case).
func validateClientMeta(meta map[string]any) error {
	verr := &blocks.ValidationError{}
	verr.Merge(blocks.ValidateMeta(meta, "_meta"))
	var records []string
	for key := range meta {
		if blocks.IsRecordKey(key) {
			records = append(records, key)
		}
	}
	slices.Sort(records)
	for _, key := range records {
		verr.Add(fmt.Sprintf("_meta[%q]", key), "is written by chatd only")
	}
	return verr.Err()
}

// idempotencyKey returns the Idempotency-Key header, if any.
func idempotencyKey(r *http.Request) (string, error) {
	values := r.Header.Values("Idempotency-Key")
	if len(values) == 0 {
		return "", nil
	}
	key := values[0]
	if len(values) > 1 || key == "" || len(key) > 255 || strings.IndexFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e }) >= 0 {
		return "", errorf(http.StatusBadRequest, "invalid_request", "Idempotency-Key: must be 1 to 255 visible ASCII characters")
	}
	return key, nil
}

func fingerprintOf(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

type answerRequest struct {
	Action  elicit.Action  `json:"action"`
	Content map[string]any `json:"content"`
	Meta    map[string]any `json:"_meta"`
}

// handleAnswer takes the result of an elicitation and resumes the paused
// processor: POST /v1/threads/{thread_id}/elicitations/{elicitation_id}.
func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	if _, err := wantsHTML(r); err != nil {
		return err
	}
	body, err := s.readBody(w, r, false)
	if err != nil {
		return err
	}
	var req answerRequest
	if err := decodeStrict(body, &req, answerShape); err != nil {
		return err
	}
	verr := &blocks.ValidationError{}
	verr.Merge(blocks.CheckExact(body))
	verr.Merge(validateClientMeta(req.Meta))
	if err := verr.Err(); err != nil {
		return err
	}
	stream := wantsStream(r)
	t, err := s.engine.BeginAnswer(r.Context(), turn.Answer{
		ThreadID: id, Principal: principalFrom(r.Context()), ElicitationID: chi.URLParam(r, "elicitation_id"),
		Result: elicit.Result{Action: req.Action, Content: req.Content}, Meta: req.Meta, Stream: stream,
	})
	if err != nil {
		return err
	}
	if !stream {
		return s.writeTurnJSON(w, r, t.Events(r.Context(), -1))
	}
	return s.writeTurnSSE(w, r, t.Events(r.Context(), -1))
}

type cancelRequest struct {
	TurnID *string `json:"turn_id"`
}

// stopping is the answer to a stop: the turn is being stopped.
type stopping struct {
	TurnID string `json:"turn_id"`
	Status string `json:"status"`
}

// handleCancel stops the thread's running turn, on whichever instance runs
// it: POST /v1/threads/{thread_id}/cancel. It answers 202 at once; the
// turn's stream ends with its stopped TurnResult.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, true)
	if err != nil {
		return err
	}
	var req cancelRequest
	if body != nil {
		if err := decodeStrict(body, &req, cancelShape); err != nil {
			return err
		}
	}
	turnID := ""
	if req.TurnID != nil {
		if turnID = *req.TurnID; !blocks.IsCanonicalID(turnID) {
			return badShape(cancelShape, "turn_id: must be a turn ID (a UUID)")
		}
	}
	running, err := s.engine.Stop(r.Context(), id, principalFrom(r.Context()), turnID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, jsonType, stopping{TurnID: running, Status: "stopping"})
}
