package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"chatd/internal/blocks"
	"chatd/internal/store"
	"chatd/internal/turn"
)

// Problem is an RFC 9457 problem detail with chatd's stable code. Elicitation
// and ElicitationExpiresAt are set on 409 elicitation_pending.
type Problem struct {
	Type                 string              `json:"type"`
	Title                string              `json:"title"`
	Status               int                 `json:"status"`
	Detail               string              `json:"detail"`
	Code                 string              `json:"code"`
	Errors               []blocks.FieldError `json:"errors,omitempty"`
	Elicitation          json.RawMessage     `json:"elicitation,omitempty"`
	ElicitationExpiresAt *blocks.Timestamp   `json:"elicitation_expires_at,omitempty"`
	// RunningTurnID names the running turn on 409 turn_not_running.
	RunningTurnID string `json:"running_turn_id,omitempty"`
}

// Error is an error with the status and code the client sees. Detail is safe
// to show; Err is the cause, logged only for 5xx.
type Error struct {
	Status int
	Code   string
	Detail string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Detail, e.Err)
	}
	return e.Code + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// errorf builds a client-facing error.
func errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Detail: fmt.Sprintf(format, args...)}
}

// sentinels maps the errors other packages produce to what clients see: the
// one table of status codes.
var sentinels = []struct {
	err    error
	status int
	code   string
	detail string
}{
	{store.ErrNotFound, http.StatusNotFound, "not_found", "thread not found"},
	{store.ErrBusy, http.StatusConflict, "thread_busy", "another turn is running on this thread; retry when it has finished"},
	{store.ErrElicitationPending, http.StatusConflict, "elicitation_pending", "the thread is waiting for the answer to an elicitation; answer it or post cancel"},
	{store.ErrElicitationNotFound, http.StatusNotFound, "elicitation_not_found", "no such elicitation on this thread"},
	{store.ErrElicitationConsumed, http.StatusConflict, "elicitation_consumed", "this elicitation has already been answered"},
	{store.ErrElicitationExpired, http.StatusGone, "elicitation_expired", "this elicitation expired before it was answered"},
	{store.ErrUnknownCursor, http.StatusBadRequest, "invalid_request", "before: no such message in this thread"},
	{store.ErrUnavailable, http.StatusServiceUnavailable, "store_unavailable", "the store is unavailable; retry shortly"},
	{store.ErrLockLost, http.StatusServiceUnavailable, "store_unavailable", "the turn lost its hold on the thread before it could be saved; nothing was saved, retry"},
	{store.ErrTurnNotFound, http.StatusNotFound, "not_found", "turn not found, or its events have expired"},
	{turn.ErrIdempotencyConflict, http.StatusUnprocessableEntity, "idempotency_conflict", "Idempotency-Key was already used with a different request body"},
	{store.ErrQuotaExceeded, http.StatusForbidden, "quota_exceeded", "you own as many threads as allowed; delete some to create more"},
	{store.ErrFileNotFound, http.StatusNotFound, "not_found", "file not found"},
	{store.ErrFileQuotaExceeded, http.StatusForbidden, "quota_exceeded", "your files take as many bytes as allowed; delete some to upload more"},
	{store.ErrFull, http.StatusInsufficientStorage, "store_full", "the server's store is full; no new threads or turns until space is freed"},
	{store.ErrMessageNotFound, http.StatusNotFound, "not_found", "message not found in this thread"},
	{turn.ErrNotRegenerable, http.StatusUnprocessableEntity, "not_regenerable", "only an assistant's reply to a plain user message can be regenerated"},
}

// failureStatus is the status of each code a turn fails with.
var failureStatus = map[string]int{
	turn.CodeProcessorFailed:  http.StatusBadGateway,
	turn.CodeStoreUnavailable: http.StatusServiceUnavailable,
	turn.CodeStoreFull:        http.StatusInsufficientStorage,
	turn.CodeNotFound:         http.StatusNotFound,
	turn.CodeInternal:         http.StatusInternalServerError,
}

var titles = map[string]string{
	"invalid_request":        "Invalid request",
	"unauthorized":           "Unauthorized",
	"not_found":              "Not found",
	"thread_busy":            "Thread busy",
	"elicitation_pending":    "Elicitation pending",
	"elicitation_not_found":  "Elicitation not found",
	"elicitation_consumed":   "Elicitation already answered",
	"elicitation_expired":    "Elicitation expired",
	"validation_failed":      "Validation failed",
	"payload_too_large":      "Payload too large",
	"unsupported_media_type": "Unsupported media type",
	"idempotency_conflict":   "Idempotency key reused",
	"store_unavailable":      "Store unavailable",
	"processor_failed":       "Processor failed",
	"internal":               "Internal error",
	"method_not_allowed":     "Method not allowed",
	"request_timeout":        "Request timeout",
	"store_full":             "Store full",
	"rate_limited":           "Too many requests",
	"quota_exceeded":         "Quota exceeded",
	"turn_not_running":       "Turn not running",
	"not_regenerable":        "Not regenerable",
}

// problemFor turns any error into the problem the client sees.
func problemFor(err error) Problem {
	var p Problem
	var apiErr *Error
	var verr *blocks.ValidationError
	var pending *store.PendingError
	var failure *turn.Failure
	var notRunning *turn.NotRunningError
	switch {
	case errors.As(err, &notRunning):
		p = Problem{Status: http.StatusConflict, Code: "turn_not_running", RunningTurnID: notRunning.RunningTurnID,
			Detail: "no turn is running on this thread"}
		if notRunning.RunningTurnID != "" {
			p.Detail = "turn_id is not the thread's running turn; running_turn_id names it"
		}
	case errors.As(err, &failure):
		p = Problem{Status: failureStatus[failure.Code], Code: failure.Code, Detail: failure.Detail, Errors: failure.Errors}
		if p.Status == 0 {
			p.Status = http.StatusInternalServerError
		}
	case errors.As(err, &apiErr):
		p = Problem{Status: apiErr.Status, Code: apiErr.Code, Detail: apiErr.Detail}
		if errors.As(apiErr.Err, &verr) {
			p.Errors = verr.Errors
		}
	case errors.As(err, &verr):
		p = Problem{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
			Detail: "the request has invalid fields; see errors", Errors: verr.Errors}
	default:
		p = Problem{Status: http.StatusInternalServerError, Code: "internal", Detail: "internal error"}
		for _, s := range sentinels {
			if errors.Is(err, s.err) {
				p = Problem{Status: s.status, Code: s.code, Detail: s.detail}
				break
			}
		}
	}
	if errors.As(err, &pending) {
		p.Elicitation = pending.Pending.Request
		p.ElicitationExpiresAt = blocks.Stamp(pending.Pending.ExpiresAt)
	}
	p.Type = "urn:chatd:problem:" + p.Code
	p.Title = titles[p.Code]
	return p
}

// statusClientGone is what a request whose client went away before its
// answer is logged and counted as (nginx's 499 Client Closed Request): not a
// server error, and not a status any client sees.
const statusClientGone = 499

// isClientGone reports whether err, failing r, only says the client went
// away: its body stopped arriving, or the request's context was cancelled
// (the connection closed) under the work that failed.
func isClientGone(r *http.Request, err error) bool {
	return errors.Is(err, errClientGone) || errors.Is(err, context.Canceled) && r.Context().Err() != nil
}
