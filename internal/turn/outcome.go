package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
	"chatd/internal/store"
)

// encodedResult is a TurnResult and its JSON.
type encodedResult struct {
	value *Result
	data  []byte
}

// invoke runs the thread's processor on the turn, within the processor's
// share of the turn timeout, sending out the deltas it streams meanwhile.
func (t *Turn) invoke(ctx context.Context, emit processor.Emit, deltas *deltaQueue, out *outbox) (processor.Output, error) {
	thread := t.begun.Thread
	proc, err := t.e.processors.Get(thread.Processor)
	if err != nil {
		return processor.Output{}, &processorError{Detail: fmt.Sprintf("processor %q is not enabled on this server", thread.Processor), Err: err}
	}
	procCtx, cancel := context.WithTimeout(ctx, t.e.processorBudget())
	defer cancel()
	t.input.ThreadID, t.input.TurnID, t.input.Principal, t.input.History = thread.ID, t.ref.TurnID, thread.Owner, t.begun.History
	return invoke(procCtx, proc, t.input, emit, deltas, out)
}

// processorBudget leaves the commit a moment inside the turn timeout, so a
// turn that uses its whole budget still ends within it.
func (e *Engine) processorBudget() time.Duration {
	margin := min(e.cfg.TurnTimeout/10, 2*time.Second)
	return e.cfg.TurnTimeout - margin
}

// invoke runs the processor until it answers or ctx ends, sending out its
// queued deltas as they come. A panic becomes an error: a faulty plugin
// fails its turn, not the server. A processor that ignores its context is
// left to finish in the background and its late output discarded, so the
// turn timeout holds whatever the plugin does.
func invoke(ctx context.Context, proc processor.Processor, in processor.Input, emit processor.Emit, deltas *deltaQueue, out *outbox) (processor.Output, error) {
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
	ended := ctx.Done()
	var grace <-chan time.Time
	for {
		select {
		case o := <-done:
			if o.err == nil && ctx.Err() != nil && !processor.Stopped(ctx) {
				o.err = ctx.Err()
			}
			return o.out, o.err
		case <-deltas.ready:
			deltas.drain(out)
		case <-grace:
			return processor.Output{}, errStopped
		case <-ended:
			if !processor.Stopped(ctx) {
				return processor.Output{}, ctx.Err()
			}
			// A stopped processor has a moment to answer with what it has,
			// within the turn's own deadline.
			timer := time.NewTimer(stopGrace(ctx))
			defer timer.Stop()
			ended, grace = nil, timer.C
		}
	}
}

// stopGrace is how long a stopped processor may still take: StopGrace, or
// what is left of its budget.
func stopGrace(ctx context.Context) time.Duration {
	grace := processor.StopGrace
	if deadline, ok := ctx.Deadline(); ok {
		grace = min(grace, time.Until(deadline))
	}
	return max(grace, 0)
}

// buildCommit turns a processor's output into the turn's commit and its
// TurnResult. An error means the output cannot be persisted as it is, which
// is the processor's failure.
func (t *Turn) buildCommit(out processor.Output) (store.Commit, encodedResult, error) {
	if err := blocks.ValidateMeta(out.Meta, "_meta"); err != nil {
		return store.Commit{}, encodedResult{}, fmt.Errorf("processor output: %w", err)
	}
	thread := t.begun.Thread
	assistant := blocks.Message{
		ID: t.first.Start.MessageID, ParentID: t.userMsg.ID, Role: blocks.RoleAssistant, Text: out.Text,
		Timestamp: blocks.Now(), ContentBlocks: out.Blocks, Meta: out.Meta,
	}
	status := StatusCompleted
	if t.stopped {
		status = StatusStopped
	}
	result := &Result{
		ThreadID: thread.ID, TurnID: t.ref.TurnID, Status: status, UserMessage: t.userMsg,
		StructuredResponse: StructuredResponse{ContentBlocks: out.Blocks, Meta: out.Meta},
	}
	commit := store.Commit{
		ThreadID: thread.ID, Owner: thread.Owner, LockToken: t.begun.LockToken, Consumed: t.consumed, TurnID: t.ref.TurnID,
	}
	if out.Pause != nil {
		request, err := encodePause(out.Pause)
		if err != nil {
			return store.Commit{}, encodedResult{}, err
		}
		// Millisecond precision: the stores keep expiry in milliseconds, and the
		// TurnResult must show the same instant a later GET of the thread does.
		expires := time.Now().Add(t.e.cfg.ElicitationTTL).UTC().Truncate(time.Millisecond)
		assistant.Meta = withMeta(out.Meta, blocks.MetaElicitationID, out.Pause.Request.ID)
		if assistant.Text == "" {
			assistant.Text = out.Pause.Request.Message
		}
		commit.Pause = &store.Pending{ElicitationID: out.Pause.Request.ID, Request: request, State: out.Pause.State, ExpiresAt: expires}
		result.Status, result.Elicitation, result.ElicitationExpiresAt = StatusInputRequired, request, blocks.Stamp(expires)
		result.StructuredResponse.Meta = assistant.Meta
	}
	result.Message = assistant
	if result.StructuredResponse.ContentBlocks == nil {
		result.StructuredResponse.ContentBlocks = []blocks.ContentBlock{}
	}
	if result.StructuredResponse.Meta == nil {
		result.StructuredResponse.Meta = map[string]any{}
	}
	body, err := blocks.Marshal(result)
	if err != nil {
		return store.Commit{}, encodedResult{}, fmt.Errorf("processor output: %w", err)
	}
	commit.Messages, commit.Parent = []blocks.Message{t.userMsg, assistant}, &t.parent
	if t.regenerated {
		commit.Messages, commit.Parent = commit.Messages[1:], &t.userMsg.ID
	}
	// A preview is set once; a thread that had one when the turn began keeps
	// it, so the commit need not offer another.
	if t.consumed == "" && thread.Preview == "" {
		commit.Preview = preview(t.userMsg.Text)
	}
	if t.idempotency != nil {
		rec := *t.idempotency
		rec.Result = body
		commit.Idempotency = &rec
	}
	return commit, encodedResult{value: result, data: body}, nil
}

// previewRunes is how much of a thread's first user message stands in for
// its title in lists.
const previewRunes = 80

func preview(text string) string {
	text = strings.TrimSpace(text)
	if r := []rune(text); len(r) > previewRunes {
		return string(r[:previewRunes])
	}
	return text
}

// encodePause encodes a pause's request as it will be stored, checking that
// it decodes again: the answer, on whichever instance, must find it intact.
func encodePause(p *processor.Pause) ([]byte, error) {
	if p.Request == nil {
		return nil, errors.New("processor output: pause without an elicitation request")
	}
	request, err := blocks.Marshal(p.Request)
	if err == nil {
		_, err = elicit.DecodeStored(request)
	}
	if err != nil {
		return nil, fmt.Errorf("processor output: elicitation request: %w", err)
	}
	return request, nil
}

var answerEvent = map[elicit.Action]string{elicit.Accept: "accepted", elicit.Decline: "declined", elicit.Cancel: "cancelled"}

// decodeAndValidate checks an answer against the stored request it answers.
func decodeAndValidate(storedRequest []byte, result elicit.Result) (*elicit.Request, error) {
	request, err := elicit.DecodeStored(storedRequest)
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

func withMeta(meta map[string]any, key string, value any) map[string]any {
	out := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		out[k] = v
	}
	out[key] = value
	return out
}
