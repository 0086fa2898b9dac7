// Package demo is the processor a newcomer meets first: a guided tour of
// everything chatd carries, driven by what the user types. Matching is by
// keyword, case-insensitive and forgiving ("Show me a card", "CARDS" and
// "card please" all work); the first command word in the message wins.
//
//	help, commands, menu, hi     what the demo can do, with suggested replies
//	card, show, article, entity  an entity card (node 42 as a teaser)
//	sources, cite, references    an answer with numbered citations and resource links
//	book, event, form, meeting   a multi-field form (text, date, number, boolean, select, email)
//	delete, remove               a yes/no confirmation
//	tags, topics, choose         a multi-select (pick one to three topics)
//	stream, story                a longer reply, to watch text arrive in pieces
//
// Anything else gets a short friendly answer followed by the help list. Every
// reply is streamed in word groups with a short pause between them, and the
// deltas concatenate to the reply text, which always reads well on its own:
// blocks and _meta enrich it for renderers that understand them. Most replies
// carry drupal.org/ai.suggested_replies so a frontend can offer the next step
// as buttons.
//
// A paused turn saves {"step": ...} as its state, which is how the resume
// knows which question was answered.
package demo

import (
	"context"
	"errors"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/processor"
)

// DefaultDelay is the pause between streamed chunks: long enough that a
// client watching the stream (curl -N) sees text arrive in pieces, short
// enough that no reply takes noticeably long.
const DefaultDelay = 20 * time.Millisecond

// Processor is the demo processor. It keeps no per-thread state — a paused
// turn's state travels in the Pause — so one value serves every thread and
// is safe for concurrent use.
type Processor struct {
	delay time.Duration

	// Fixed content is built once; an error here is a bug in the demo
	// itself, reported by every Process call rather than by a panic.
	card     blocks.ContentBlock
	sources  []source
	links    []blocks.ContentBlock
	fixedErr error
}

// New returns the demo processor with DefaultDelay between streamed chunks.
func New() *Processor { return NewWithDelay(DefaultDelay) }

// NewWithDelay returns the demo processor pausing d between streamed chunks;
// d = 0 streams without pausing, which tests use.
func NewWithDelay(d time.Duration) *Processor {
	p := &Processor{delay: max(d, 0), sources: demoSources}
	p.fixedErr = p.buildFixed()
	return p
}

// buildFixed builds the content every turn shares: the article's card and
// the sources' links.
func (p *Processor) buildFixed() error {
	card, err := newCard()
	if err != nil {
		return err
	}
	links, err := sourceLinks(p.sources)
	if err != nil {
		return err
	}
	p.card, p.links = card, links
	return nil
}

// HistoryWindow implements processor.HistoryWindower: the tour answers each
// message on its own (a pause keeps what it needs in its state), so its
// turns fetch no history.
func (*Processor) HistoryWindow() int { return 0 }

// Describe implements processor.Processor.
func (*Processor) Describe() string {
	return "Guided tour of chatd: entity cards, citations, suggested replies, forms, confirms, multi-select and streamed text. Type help."
}

// Process implements processor.Processor.
func (p *Processor) Process(ctx context.Context, in processor.Input, emit processor.Emit) (processor.Output, error) {
	if p.fixedErr != nil {
		return processor.Output{}, p.fixedErr
	}
	if err := ctx.Err(); err != nil {
		return processor.Output{}, err
	}
	var (
		r   reply
		err error
	)
	switch {
	case in.Resume != nil:
		r, err = p.resume(in.Resume)
	case in.Message != nil:
		r, err = p.answer(in.Message.Text)
	default:
		return processor.Output{}, errors.New("demo: no message to answer")
	}
	if err != nil {
		return processor.Output{}, err
	}
	if err := p.stream(ctx, r.out.Text, r.progress, emit); err != nil {
		return processor.Output{}, err
	}
	return r.out, nil
}

// reply is a finished answer plus the _meta its first streamed delta carries
// (a status item shown while the answer arrives).
type reply struct {
	out      processor.Output
	progress map[string]any
}
