package turn

import (
	"context"
	"errors"
	"fmt"

	"chatd/internal/blocks"
	"chatd/internal/processor"
	"chatd/internal/store"
)

// Failure is why a turn failed: the payload of its error event, live or
// logged. Code is one of the Code constants, Detail is safe to show the
// client, and Errors name fields when there are any. Transports give it
// their own form (the HTTP layer a problem object with a status).
type Failure struct {
	Code   string              `json:"code"`
	Detail string              `json:"detail"`
	Errors []blocks.FieldError `json:"errors,omitempty"`
	// Err is the cause, for the server's logs; a failure read back from a
	// turn's log has none.
	Err error `json:"-"`
}

func (f *Failure) Error() string {
	if f.Err != nil {
		return fmt.Sprintf("%s: %s: %v", f.Code, f.Detail, f.Err)
	}
	return f.Code + ": " + f.Detail
}

func (f *Failure) Unwrap() error { return f.Err }

// The codes a turn fails with.
const (
	CodeProcessorFailed  = "processor_failed"
	CodeStoreUnavailable = "store_unavailable"
	CodeStoreFull        = "store_full"
	CodeNotFound         = "not_found"
	CodeInternal         = "internal"
)

// storeFailures are the store's errors a begun turn can end with, as the
// client hears them.
var storeFailures = []struct {
	err          error
	code, detail string
}{
	{store.ErrLockLost, CodeStoreUnavailable, "the turn lost its hold on the thread before it could be saved; nothing was saved, retry"},
	{store.ErrUnavailable, CodeStoreUnavailable, "the store is unavailable; retry shortly"},
	{store.ErrFull, CodeStoreFull, "the server's store is full; no new threads or turns until space is freed"},
	{store.ErrNotFound, CodeNotFound, "thread not found"},
}

// storeFailure is the failure of a turn whose commit the store refused.
func storeFailure(err error) *Failure {
	for _, s := range storeFailures {
		if errors.Is(err, s.err) {
			return &Failure{Code: s.code, Detail: s.detail, Err: err}
		}
	}
	return &Failure{Code: CodeInternal, Detail: "internal error", Err: err}
}

// processorError fails a turn because of its processor: its output cannot
// be persisted as it is. Detail is safe to show the client.
type processorError struct {
	Detail string
	Err    error
}

func (e *processorError) Error() string { return e.Detail + ": " + e.Err.Error() }

func (e *processorError) Unwrap() error { return e.Err }

// processorFailure is the failure of a turn whose processor failed, timed
// out, panicked, or answered with output that cannot be persisted.
func processorFailure(err error) *Failure {
	var perr *processorError
	if errors.As(err, &perr) {
		return &Failure{Code: CodeProcessorFailed, Detail: perr.Detail, Err: err}
	}
	return &Failure{Code: CodeProcessorFailed, Detail: failureDetail(err), Err: err}
}

// failureDetail says safely why a processor failed: the turn timeout, or
// the detail a processor's *processor.Error offers its client.
func failureDetail(err error) string {
	var perr *processor.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the processor did not answer within the turn timeout"
	case errors.As(err, &perr) && perr.Detail != "":
		return perr.Detail
	}
	return "the processor failed to answer"
}

// turnLost ends a followed turn whose log expired before its last event:
// the instance running it stopped. It has no cause to log here; the
// instance that stopped had its own.
var turnLost = Failure{Code: CodeProcessorFailed,
	Detail: "the instance running the turn stopped before it ended; nothing of it was saved"}
