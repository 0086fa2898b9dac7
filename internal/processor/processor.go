// Package processor defines the contract between chatd and the plugins that
// answer turns, and the registry of plugins enabled at startup.
//
// A Processor is invoked once per turn with the thread, the principal, a
// bounded window of recent history and either the user's new message or a
// Resume (the elicitation it asked, the user's answer and the state it saved
// when it paused). It streams text deltas through Emit as it works and
// returns the final Output: authoritative text, content blocks, message
// _meta and optionally a Pause — an elicitation to ask the user plus opaque
// state to resume from. chatd, not the processor, persists all of it
// atomically with the turn, so a processor keeps no state of its own between
// turns and any instance can resume any paused turn.
package processor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

// Processor answers turns.
type Processor interface {
	// Describe returns a one-line description shown by GET /v1/processors.
	Describe() string
	// Process runs one turn. It calls emit for each text delta it streams (the
	// concatenated deltas should equal Output.Text) and returns the final
	// output, or an error that fails the turn with nothing persisted. It must
	// honour ctx: the turn timeout cancels it, and so does the user stopping
	// the turn, with ErrStopped as its cause (see Stopped). (A client going
	// away or the server shutting down does not: the turn finishes and is
	// persisted.) A processor that ignores ctx is abandoned at the timeout
	// and its output discarded.
	Process(ctx context.Context, in Input, emit Emit) (Output, error)
}

// ErrStopped is the cause (context.Cause) of a turn's context when the user
// stopped the turn, as opposed to context.DeadlineExceeded for the turn
// timeout. A stopped processor should stop spending (abort its model call,
// cancel its tool calls) and return what it has: what it returns within
// StopGrace is kept, marked stopped; after that, or on an error, chatd keeps
// the text it streamed.
var ErrStopped = errors.New("the user stopped the turn")

// StopGrace is how long a stopped processor has to return its output.
const StopGrace = 2 * time.Second

// Stopped reports whether ctx ended because the user stopped the turn.
func Stopped(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrStopped) }

// HistoryWindower is implemented by a processor that reads fewer history
// messages than the configured window, or none: chatd then fetches only that
// many for its turns. A processor that does not implement it gets the whole
// configured window (CHATD_HISTORY_WINDOW).
type HistoryWindower interface {
	// HistoryWindow returns how many recent messages the processor reads.
	HistoryWindow() int
}

// Emit streams one text delta to the client while a turn runs.
type Emit func(Delta)

// Delta is a streamed piece of the reply text, optionally with _meta (for
// example a status item shown while a tool runs).
type Delta struct {
	Text string
	Meta map[string]any
}

// Input is what a processor is invoked with. Exactly one of Message and
// Resume is set.
type Input struct {
	ThreadID string
	// TurnID names this turn; a resume is a turn of its own with its own ID.
	TurnID    string
	Principal string
	// History is the most recent messages of the thread, oldest first, not
	// including Message, still encoded: call History.Decode when the
	// processor needs them (many turns never do, and decoding is most of a
	// turn's own cost).
	History blocks.EncodedMessages
	// Message is the user's new message on a plain turn.
	Message *blocks.Message
	// Resume is set when the turn answers the processor's elicitation.
	Resume *Resume
}

// Resume carries what a paused processor needs to continue: its own request,
// the user's validated answer and the state it saved when it paused.
// Message is the answer as history records it (readable text, and _meta
// holding the client's own _meta beside blocks.MetaElicitationResult).
type Resume struct {
	Request *elicit.Request
	Result  elicit.Result
	State   []byte
	Message blocks.Message
}

// Output is a finished turn. Text is authoritative for block-unaware
// consumers; Blocks and Meta ride the assistant message. When Pause is set
// the turn ends with status input_required and Text restates the question
// in prose. When Stopped is set the processor ended the turn early on its
// own account (a spending limit reached): the turn ends with status stopped,
// marked drupal.org/ai.stopped as if the user had stopped it, and any Pause
// is dropped.
type Output struct {
	Text    string
	Blocks  []blocks.ContentBlock
	Meta    map[string]any
	Pause   *Pause
	Stopped bool
	// Usage is the model tokens the turn spent, when the processor knows
	// them: chatd records them in the reply's _meta
	// (blocks.MetaUsage) and counts them (chatd_model_tokens_total).
	Usage *Usage
}

// Usage is what a turn's model calls consumed, summed over the calls that
// reported it.
type Usage struct {
	Model        string
	InputTokens  int64
	OutputTokens int64
}

// Pause asks the user a structured question and ends the turn; State is
// handed back in Resume when the answer arrives.
type Pause struct {
	Request *elicit.Request
	State   []byte
}

// Error is a processor failure whose Detail is safe to show the client: chatd
// answers 502 processor_failed with Detail instead of its generic detail, and
// logs Err. A processor returns one when the client can act on the reason —
// "the model answered 429 Too Many Requests" — without learning internals
// such as addresses or credentials.
type Error struct {
	Detail string
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Detail
	}
	return e.Detail + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Registry holds the processors enabled at startup, by name.
type Registry struct {
	byName      map[string]Processor
	defaultName string
}

// ErrUnknown is returned for a processor name that is not registered.
var ErrUnknown = errors.New("unknown processor")

// NewRegistry returns a registry of procs with defaultName as the default; it
// fails when the default is not among them.
func NewRegistry(procs map[string]Processor, defaultName string) (*Registry, error) {
	if len(procs) == 0 {
		return nil, errors.New("no processors enabled")
	}
	if _, ok := procs[defaultName]; !ok {
		return nil, fmt.Errorf("default processor %q is not enabled", defaultName)
	}
	byName := make(map[string]Processor, len(procs))
	for name, p := range procs {
		byName[name] = p
	}
	return &Registry{byName: byName, defaultName: defaultName}, nil
}

// Get returns the processor registered as name, or ErrUnknown.
func (r *Registry) Get(name string) (Processor, error) {
	p, ok := r.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	return p, nil
}

// Default returns the name of the default processor.
func (r *Registry) Default() string { return r.defaultName }

// Windows returns the history window of every registered processor that
// limits its own (HistoryWindower), capped at limit.
func (r *Registry) Windows(limit int) map[string]int {
	windows := map[string]int{}
	for name, p := range r.byName {
		if w, ok := p.(HistoryWindower); ok {
			windows[name] = max(min(w.HistoryWindow(), limit), 0)
		}
	}
	return windows
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for name := range r.byName {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
