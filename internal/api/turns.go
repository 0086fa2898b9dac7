package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/store"

	"github.com/go-chi/chi/v5"
)

// turnResult is a TurnResult on the wire.
type turnResult struct {
	ThreadID             string             `json:"thread_id"`
	Status               string             `json:"status"`
	UserMessage          blocks.Message     `json:"user_message"`
	Message              blocks.Message     `json:"message"`
	StructuredResponse   structuredResponse `json:"structured_response"`
	Elicitation          json.RawMessage    `json:"elicitation"`
	ElicitationExpiresAt *time.Time         `json:"elicitation_expires_at"`
}

// structuredResponse mirrors the assistant message's blocks and _meta; it is
// never null and its members are never null.
type structuredResponse struct {
	ContentBlocks []blocks.ContentBlock `json:"content_blocks"`
	Meta          map[string]any        `json:"_meta"`
}

// Turn outcomes, as in TurnResult.status and the turns metric.
const (
	statusCompleted     = "completed"
	statusInputRequired = "input_required"
	statusFailed        = "failed"
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
	body, err := s.readBody(w, r, false)
	if err != nil {
		return err
	}
	userMsg, err := parseTurnRequest(body, s.cfg.MaxBlocks)
	if err != nil {
		return err
	}
	principal := principalFrom(r.Context())
	start, err := s.store.BeginTurn(r.Context(), store.BeginTurn{
		ThreadID: id, Principal: principal, IdempotencyKey: idemKey,
		LockTTL: s.cfg.TurnTimeout, Window: s.cfg.HistoryWindow, WindowByProcessor: s.windows,
	})
	if err != nil {
		return err
	}
	fingerprint := fingerprintOf(body)
	if start.Replay != nil {
		if start.Replay.Fingerprint != fingerprint {
			return errorf(http.StatusUnprocessableEntity, "idempotency_conflict",
				"Idempotency-Key was already used with a different request body")
		}
		return s.replay(w, r, start.Replay.Result)
	}
	job := turnJob{start: start, userMsg: userMsg, input: processor.Input{Message: &userMsg}}
	if idemKey != "" {
		job.idempotency = &store.Idempotency{Principal: principal, Key: idemKey, Fingerprint: fingerprint}
	}
	return s.runTurn(w, r, job)
}

// parseTurnRequest validates a turn body into the user's message. Shape
// errors are 400; more than maxBlocks blocks, invalid blocks and _meta keys
// are 422 with every path.
func parseTurnRequest(body []byte, maxBlocks int) (blocks.Message, error) {
	var req turnRequest
	if err := decodeStrict(body, &req); err != nil {
		return blocks.Message{}, err
	}
	if req.Message == nil {
		return blocks.Message{}, errorf(http.StatusBadRequest, "invalid_request", "message: required")
	}
	var list []blocks.ContentBlock
	verr := &blocks.ValidationError{}
	if raw := strings.TrimSpace(string(req.ContentBlocks)); raw != "" && raw != "null" {
		if raw[0] != '[' {
			return blocks.Message{}, errorf(http.StatusBadRequest, "invalid_request", "content_blocks: must be an array")
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
		return blocks.Message{}, errorf(http.StatusBadRequest, "invalid_request", "message: must not be empty unless content_blocks are given")
	}
	return blocks.NewMessage(blocks.RoleUser, *req.Message, list, req.Meta), nil
}

// chatdRecords are the _meta keys with which chatd records the elicitation
// protocol in history; a client that could set them could forge a question
// or an answer in a replayed conversation.
var chatdRecords = []string{blocks.MetaElicitationID, blocks.MetaElicitationResult}

// validateClientMeta checks a client's _meta: the key grammar, and none of
// the keys chatd alone writes.
func validateClientMeta(meta map[string]any) error {
	verr := &blocks.ValidationError{}
	verr.Merge(blocks.ValidateMeta(meta, "_meta"))
	for _, key := range chatdRecords {
		if _, ok := meta[key]; ok {
			verr.Add(fmt.Sprintf("_meta[%q]", key), "is written by chatd only")
		}
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

// replay answers an idempotent retry with the original TurnResult.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, result []byte) error {
	if wantsStream(r) {
		stream := s.startStream(w)
		stream.send("turn.completed", result)
		stream.close()
		return nil
	}
	writeBody(w, http.StatusOK, jsonType, result)
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
	elicitationID := chi.URLParam(r, "elicitation_id")
	body, err := s.readBody(w, r, false)
	if err != nil {
		return err
	}
	var req answerRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if err := validateClientMeta(req.Meta); err != nil {
		return err
	}
	principal := principalFrom(r.Context())
	result := elicit.Result{Action: req.Action, Content: req.Content}
	// Validate before claiming: a claim excludes every other answer while it
	// is held, so an invalid answer must be refused without taking one. This
	// read also answers for the thread first, so another principal's thread
	// looks exactly like a missing one whatever the elicitation ID.
	thread, pending, err := s.store.GetThread(r.Context(), id, principal)
	if err != nil {
		return err
	}
	if !canonicalID(elicitationID) {
		return store.ErrElicitationNotFound
	}
	// An elicitation's request never changes, so the request validated here
	// is the one the claim below finds.
	var request *elicit.Request
	if pending != nil && pending.ElicitationID == elicitationID {
		if request, err = decodeAndValidate(pending.Request, result); err != nil {
			return err
		}
	}
	start, err := s.store.BeginResume(r.Context(), store.BeginResume{
		ThreadID: id, Principal: principal, ElicitationID: elicitationID,
		LockTTL: s.cfg.TurnTimeout, Window: s.cfg.HistoryWindow, WindowByProcessor: s.windows,
	})
	if errors.Is(err, store.ErrElicitationExpired) {
		// Redis expires pending state silently, so an expiry is counted when
		// a late answer discovers it.
		s.metrics.elicitations.WithLabelValues(thread.Processor, "expired").Inc()
	}
	if err != nil {
		return err
	}
	if request == nil {
		// Defensive: a claim implies the read above saw this elicitation
		// pending (the read shows it even while another answer holds it),
		// but the request is taken from the claim if the read missed it.
		if request, err = decodeAndValidate(start.Pending.Request, result); err != nil {
			s.release(start)
			return err
		}
	}
	// The answer's own _meta is kept on the recorded message, beside the
	// record of the result.
	userMsg := blocks.NewMessage(blocks.RoleUser, describeAnswer(result), nil,
		withMeta(req.Meta, blocks.MetaElicitationResult, answerRecord(elicitationID, result)))
	return s.runTurn(w, r, turnJob{
		start:    start,
		userMsg:  userMsg,
		consumed: elicitationID,
		answer:   result.Action,
		input: processor.Input{Resume: &processor.Resume{
			Request: request, Result: result, State: start.Pending.State,
		}},
	})
}

// decodeAndValidate checks an answer against the stored request it answers.
func decodeAndValidate(storedRequest []byte, result elicit.Result) (*elicit.Request, error) {
	request, err := elicit.DecodeRequest(storedRequest)
	if err != nil {
		return nil, fmt.Errorf("stored elicitation does not decode: %w", err)
	}
	if err := request.Validate(result); err != nil {
		return nil, err
	}
	return request, nil
}

func answerRecord(elicitationID string, res elicit.Result) map[string]any {
	rec := map[string]any{"elicitation_id": elicitationID, "action": string(res.Action)}
	if len(res.Content) > 0 {
		rec["content"] = res.Content
	}
	return rec
}

// describeAnswer renders an elicitation result as readable text for
// block-unaware consumers of history.
func describeAnswer(res elicit.Result) string {
	switch res.Action {
	case elicit.Decline:
		return "Declined."
	case elicit.Cancel:
		return "Cancelled."
	}
	if len(res.Content) == 0 {
		return "Accepted."
	}
	keys := make([]string, 0, len(res.Content))
	for k := range res.Content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + describeValue(res.Content[k])
	}
	return "Accepted: " + strings.Join(parts, "; ")
}

func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		items := make([]string, len(v))
		for i, item := range v {
			items[i] = describeValue(item)
		}
		return strings.Join(items, ", ")
	case bool:
		if v {
			return "yes"
		}
		return "no"
	default:
		return fmt.Sprint(v)
	}
}

// turnJob is a begun turn: the lock is held and must be committed or released.
type turnJob struct {
	start       store.TurnStart
	userMsg     blocks.Message
	input       processor.Input
	consumed    string
	answer      elicit.Action
	idempotency *store.Idempotency
}

// release aborts a begun turn. A failed release is harmless: the lock
// expires with its TTL.
func (s *Server) release(start store.TurnStart) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.Release(ctx, start.Thread.ID, start.LockToken); err != nil {
		s.log.Warn("releasing turn lock", "thread_id", start.Thread.ID, "error", err.Error())
	}
}

// runTurn runs the processor of a begun turn and commits its outcome, as
// JSON or as a stream. The turn does not depend on the client staying
// connected: it runs to completion, bounded by the turn timeout.
func (s *Server) runTurn(w http.ResponseWriter, r *http.Request, job turnJob) error {
	thread := job.start.Thread
	proc, err := s.processors.Get(thread.Processor)
	if err != nil {
		s.release(job.start)
		s.metrics.turns.WithLabelValues(thread.Processor, statusFailed).Inc()
		return &Error{Status: http.StatusBadGateway, Code: "processor_failed",
			Detail: fmt.Sprintf("processor %q is not enabled on this server", thread.Processor), Err: err}
	}
	assistantID := blocks.NewID()

	var stream *sseStream
	emit := func(processor.Delta) {}
	if wantsStream(r) {
		stream = s.startStream(w)
		defer stream.close()
		stream.sendJSON("message.start", map[string]string{"thread_id": thread.ID, "message_id": assistantID})
		emit = func(d processor.Delta) {
			if d.Text == "" && len(d.Meta) == 0 {
				return
			}
			stream.sendJSON("text.delta", deltaEvent{Delta: d.Text, Meta: d.Meta})
		}
	}

	result, err := s.completeTurn(r.Context(), job, proc, assistantID, emit)
	if err != nil {
		if stream == nil {
			return err
		}
		p := problemFor(err)
		s.observeError(r, p, err)
		body, _ := marshal(p)
		stream.send("error", body)
		return nil
	}
	if stream != nil {
		stream.send("turn.completed", result)
		return nil
	}
	writeBody(w, http.StatusOK, jsonType, result)
	return nil
}

type deltaEvent struct {
	Delta string         `json:"delta"`
	Meta  map[string]any `json:"_meta,omitempty"`
}

// completeTurn invokes the processor and commits the turn, returning the
// encoded TurnResult. On failure nothing is appended and the lock released.
func (s *Server) completeTurn(reqCtx context.Context, job turnJob, proc processor.Processor, assistantID string, emit processor.Emit) ([]byte, error) {
	thread := job.start.Thread
	// The turn outlives its request: a disconnecting client must not lose it.
	ctx := context.WithoutCancel(reqCtx)
	procCtx, cancel := context.WithTimeout(ctx, s.processorBudget())
	defer cancel()

	job.input.ThreadID, job.input.Principal, job.input.History = thread.ID, thread.Owner, job.start.History
	out, err := invoke(procCtx, proc, job.input, emit)
	var commit store.Commit
	var body []byte
	if err == nil {
		commit, body, err = s.buildCommit(job, out, assistantID)
	}
	if err != nil {
		s.release(job.start)
		s.metrics.turns.WithLabelValues(thread.Processor, statusFailed).Inc()
		return nil, &Error{Status: http.StatusBadGateway, Code: "processor_failed", Detail: processorFailure(err), Err: err}
	}
	if err := s.store.CommitTurn(ctx, commit); err != nil {
		s.metrics.turns.WithLabelValues(thread.Processor, statusFailed).Inc()
		if errors.Is(err, store.ErrLockLost) {
			return nil, &Error{Status: http.StatusBadGateway, Code: "processor_failed",
				Detail: "the turn did not finish within the turn timeout", Err: err}
		}
		return nil, err
	}
	status := statusCompleted
	if commit.Pause != nil {
		status = statusInputRequired
		s.metrics.elicitations.WithLabelValues(thread.Processor, "created").Inc()
	}
	s.metrics.turns.WithLabelValues(thread.Processor, status).Inc()
	if job.answer != "" {
		s.metrics.elicitations.WithLabelValues(thread.Processor, answerEvent[job.answer]).Inc()
	}
	return body, nil
}

// buildCommit turns a processor's output into the turn's commit and its
// encoded TurnResult. An error means the output cannot be persisted as it
// is, which is the processor's failure.
func (s *Server) buildCommit(job turnJob, out processor.Output, assistantID string) (store.Commit, []byte, error) {
	if err := blocks.ValidateMeta(out.Meta, "_meta"); err != nil {
		return store.Commit{}, nil, fmt.Errorf("processor output: %w", err)
	}
	thread := job.start.Thread
	assistant := blocks.Message{
		ID: assistantID, Role: blocks.RoleAssistant, Text: out.Text,
		Timestamp: blocks.Now(), ContentBlocks: out.Blocks, Meta: out.Meta,
	}
	result := turnResult{
		ThreadID: thread.ID, Status: statusCompleted, UserMessage: job.userMsg,
		StructuredResponse: structuredResponse{ContentBlocks: out.Blocks, Meta: out.Meta},
	}
	commit := store.Commit{ThreadID: thread.ID, LockToken: job.start.LockToken, Consumed: job.consumed}
	if out.Pause != nil {
		request, err := encodePause(out.Pause)
		if err != nil {
			return store.Commit{}, nil, err
		}
		// Millisecond precision: the stores keep expiry in milliseconds, and the
		// TurnResult must show the same instant a later GET of the thread does.
		expires := time.Now().Add(s.cfg.ElicitationTTL).UTC().Truncate(time.Millisecond)
		assistant.Meta = withMeta(out.Meta, blocks.MetaElicitationID, out.Pause.Request.ID)
		if assistant.Text == "" {
			assistant.Text = out.Pause.Request.Message
		}
		commit.Pause = &store.Pending{ElicitationID: out.Pause.Request.ID, Request: request, State: out.Pause.State, ExpiresAt: expires}
		result.Status, result.Elicitation, result.ElicitationExpiresAt = statusInputRequired, request, &expires
		result.StructuredResponse.Meta = assistant.Meta
	}
	result.Message = assistant
	if result.StructuredResponse.ContentBlocks == nil {
		result.StructuredResponse.ContentBlocks = []blocks.ContentBlock{}
	}
	if result.StructuredResponse.Meta == nil {
		result.StructuredResponse.Meta = map[string]any{}
	}
	body, err := marshal(result)
	if err != nil {
		return store.Commit{}, nil, fmt.Errorf("processor output: %w", err)
	}
	commit.Messages = []blocks.Message{job.userMsg, assistant}
	if job.idempotency != nil {
		rec := *job.idempotency
		rec.Result = body
		commit.Idempotency = &rec
	}
	return commit, body, nil
}

// encodePause encodes a pause's request as it will be stored, checking that
// it decodes again: the answer, on whichever instance, must find it intact.
func encodePause(p *processor.Pause) ([]byte, error) {
	if p.Request == nil {
		return nil, errors.New("processor output: pause without an elicitation request")
	}
	request, err := marshal(p.Request)
	if err == nil {
		_, err = elicit.DecodeRequest(request)
	}
	if err != nil {
		return nil, fmt.Errorf("processor output: elicitation request: %w", err)
	}
	return request, nil
}

var answerEvent = map[elicit.Action]string{elicit.Accept: "accepted", elicit.Decline: "declined", elicit.Cancel: "cancelled"}

// processorBudget leaves the commit a moment inside the lock's TTL, so a
// processor that uses its whole timeout still commits before the lock lapses.
func (s *Server) processorBudget() time.Duration {
	margin := min(s.cfg.TurnTimeout/10, 2*time.Second)
	return s.cfg.TurnTimeout - margin
}

// invoke runs the processor until it answers or ctx ends. A panic becomes an
// error: a faulty plugin fails its turn, not the server. A processor that
// ignores its context is left to finish in the background and its late
// output discarded, so the turn timeout holds whatever the plugin does.
func invoke(ctx context.Context, proc processor.Processor, in processor.Input, emit processor.Emit) (processor.Output, error) {
	type outcome struct {
		out processor.Output
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				o.err = fmt.Errorf("processor panicked: %v", v)
			}
			done <- o
		}()
		o.out, o.err = proc.Process(ctx, in, emit)
	}()
	select {
	case o := <-done:
		if o.err == nil && ctx.Err() != nil {
			o.err = ctx.Err()
		}
		return o.out, o.err
	case <-ctx.Done():
		return processor.Output{}, ctx.Err()
	}
}

func withMeta(meta map[string]any, key string, value any) map[string]any {
	out := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		out[k] = v
	}
	out[key] = value
	return out
}
