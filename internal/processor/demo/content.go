package demo

// Content: the entity card, the story, and how every reply is streamed.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"chatd/internal/blocks"
	"chatd/internal/processor"
)

// wordsPerChunk is how many words each streamed delta carries.
const wordsPerChunk = 3

// The demo article shown as an entity card. The UUID is fixed so that the
// card is the same in every reply and across restarts.
const (
	cardEntityType = "node"
	cardID         = "42"
	cardUUID       = "3f2c8a4e-7b1d-4c6e-9a0f-5d8e2b7c1a94"
	cardViewMode   = "teaser"
	cardTitle      = "Getting started with chatd"
)

// newCard returns the demo article's entity card.
func newCard() (blocks.ContentBlock, error) {
	// The label as the link title gives block-unaware renderers something
	// better to show than "node/42".
	card, err := blocks.EntityCardWith(
		blocks.EntityRef{EntityType: cardEntityType, ID: cardID, UUID: cardUUID, ViewMode: cardViewMode},
		blocks.LinkOptions{Title: cardTitle},
	)
	if err != nil {
		return blocks.ContentBlock{}, fmt.Errorf("demo: entity card: %w", err)
	}
	return card, nil
}
func (p *Processor) cardReply() reply {
	text := fmt.Sprintf("Here is article %s, %q, as an entity card. A frontend that knows Drupal entities "+
		"renders it as a %s; any other client sees a plain link to entity:%s/%s.",
		cardID, cardTitle, cardViewMode, cardEntityType, cardID)
	return reply{out: processor.Output{
		Text:   text,
		Blocks: []blocks.ContentBlock{p.card},
		Meta:   suggestMeta(cmdCard),
	}}
}

const storyText = `This reply is streamed. chatd sends each piece to the client as a text.delta event the moment the processor produces it, so a frontend can show the answer growing word by word instead of waiting for the whole turn. When the processor finishes, a final turn.completed event carries the complete message, its content blocks and its _meta, exactly as history will keep it. If the client disconnects halfway, the turn still runs to completion and is saved, so reloading the thread shows the full reply. Try it with curl -N and an Accept: text/event-stream header to watch the pieces arrive.`

func storyReply() reply {
	return reply{out: processor.Output{Text: storyText, Meta: suggestMeta(cmdStream)}}
}

// stream sends text through emit in groups of words, pausing p.delay between
// groups; progress rides the first delta. The deltas concatenate to text.
func (p *Processor) stream(ctx context.Context, text string, progress map[string]any, emit processor.Emit) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for i, chunk := range chunks(text, wordsPerChunk) {
		if i > 0 && p.delay > 0 {
			if timer == nil {
				timer = time.NewTimer(p.delay)
			} else {
				timer.Reset(p.delay)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		d := processor.Delta{Text: chunk}
		if i == 0 {
			d.Meta = progress
		}
		emit(d)
	}
	return nil
}

// chunks splits text after every n-th space; the pieces concatenate back to
// text exactly, whitespace and newlines included.
func chunks(text string, n int) []string {
	if text == "" {
		return nil
	}
	words := strings.SplitAfter(text, " ")
	// Text ending in a space leaves an empty last piece; an empty delta
	// would only be noise on the wire.
	if words[len(words)-1] == "" {
		words = words[:len(words)-1]
	}
	out := make([]string, 0, len(words)/n+1)
	for i := 0; i < len(words); i += n {
		out = append(out, strings.Join(words[i:min(i+n, len(words))], ""))
	}
	return out
}
