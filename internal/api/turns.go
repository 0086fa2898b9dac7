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
}

// handleTurn runs a plain turn: POST /v1/threads/{thread_id}/turns.
func (s *Server) handleTurn(w http.ResponseWriter, r *http.Request) error {
	id, err := threadID(r)
	if err != nil {
		return err
	}
	idemKey, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	if _, err := wantsHTML(r); err != nil {
		return err
	}
	lastEventID, err := lastEventID(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r, false)
	if err != nil {
		return err
	}
	userMsg, err := parseTurnRequest(body, s.cfg.MaxBlocks)
	if err != nil {
		return err
	}
	principal := principalFrom(r.Context())
	t, err := s.engine.Begin(r.Context(), turn.Plain{
		ThreadID: id, Principal: principal, Message: userMsg,
		IdempotencyKey: idemKey, Fingerprint: fingerprintOf(body),
	})
	var running *store.RunningError
	if errors.As(err, &running) && lastEventID >= 0 && wantsStream(r) {
		// A retry of a stream that broke: pick the same turn up again.
		return s.follow(w, r, id, running.TurnID, lastEventID)
	}
	if err != nil {
		return err
	}
	if t.Replay != nil {
		return s.replay(w, r, id, t.Replay, lastEventID)
	}
	return s.runTurn(w, r, t)
}

// parseTurnRequest validates a turn body into the user's message. Shape
// errors are 400; more than maxBlocks blocks, invalid blocks and _meta keys,
// and values chatd could not give back exactly (blocks.CheckExact), are 422
// with every path.
func parseTurnRequest(body []byte, maxBlocks int) (blocks.Message, error) {
	var req turnRequest
	if err := decodeStrict(body, &req, turnShape); err != nil {
		return blocks.Message{}, err
	}
	if req.Message == nil {
		return blocks.Message{}, badShape(turnShape, "message: required")
	}
	var list []blocks.ContentBlock
	verr := &blocks.ValidationError{}
	verr.Merge(blocks.CheckExact(body))
	if raw := strings.TrimSpace(string(req.ContentBlocks)); raw != "" && raw != "null" {
		if raw[0] != '[' {
			return blocks.Message{}, badShape(turnShape, "content_blocks: must be an array of content blocks")
		}
		if n := arrayLen(req.ContentBlocks); n > maxBlocks {
			verr.Add("content_blocks", fmt.Sprintf("%d content blocks; at most %d are allowed per message", n, maxBlocks))
			return blocks.Message{}, verr
		}
		decoded, err := blocks.DecodeList(req.ContentBlocks, "content_blocks")
		verr.Merge(err)
		list = decoded
	}
	verr.Merge(validateClientMeta(req.Meta))
	if err := verr.Err(); err != nil {
		return blocks.Message{}, err
	}
	if *req.Message == "" && len(list) == 0 {
		return blocks.Message{}, badShape(turnShape, "message: must not be empty unless content_blocks are given")
	}
	return blocks.NewMessage(blocks.RoleUser, *req.Message, list, req.Meta), nil
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

// replay answers an idempotent retry of a finished turn with its original
// TurnResult. A stream retry with Last-Event-ID resumes the turn's logged
// events while the log lives; otherwise the result comes as one event.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, threadID string, result []byte, lastEventID int) error {
	if !wantsStream(r) {
		writeBody(w, http.StatusOK, jsonType, s.renderResult(r, result))
		return nil
	}
	if lastEventID >= 0 {
		var ids struct {
			TurnID string `json:"turn_id"`
		}
		if json.Unmarshal(result, &ids) == nil && blocks.IsCanonicalID(ids.TurnID) {
			err := s.follow(w, r, threadID, ids.TurnID, lastEventID)
			if !errors.Is(err, store.ErrTurnNotFound) {
				return err
			}
		}
	}
	stream := s.startStream(w)
	stream.send(1, turn.NameCompleted, s.renderResult(r, result))
	stream.close()
	return nil
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
	t, err := s.engine.BeginAnswer(r.Context(), turn.Answer{
		ThreadID: id, Principal: principalFrom(r.Context()), ElicitationID: chi.URLParam(r, "elicitation_id"),
		Result: elicit.Result{Action: req.Action, Content: req.Content}, Meta: req.Meta,
	})
	if err != nil {
		return err
	}
	return s.runTurn(w, r, t)
}

// runTurn runs a begun turn and writes it: as one JSON TurnResult, or as a
// Server-Sent Events stream of its events. Either way the turn runs to
// completion and is persisted, whether or not the client stays.
func (s *Server) runTurn(w http.ResponseWriter, r *http.Request, t *turn.Turn) error {
	if !wantsStream(r) {
		var last turn.Event
		t.Run(r.Context(), false, func(ev turn.Event) { last = ev })
		if last.Kind == turn.EventError {
			return last.Err
		}
		writeBody(w, http.StatusOK, jsonType, s.renderResult(r, last.Data))
		return nil
	}
	stream := s.startStream(w)
	defer stream.close()
	t.Run(r.Context(), true, func(ev turn.Event) {
		if ev.Kind == turn.EventError {
			s.observeError(r, problemFor(ev.Err), ev.Err)
		}
		data := ev.Data
		if ev.Kind == turn.EventCompleted {
			data = s.renderResult(r, data)
		}
		stream.send(ev.ID, ev.Name(), data)
	})
	return nil
}

// encodeProblem is a failed turn's error event data: the problem the client
// sees for err.
func encodeProblem(err error) []byte {
	body, mErr := marshal(problemFor(err))
	if mErr != nil {
		return []byte(internalProblem)
	}
	return body
}
