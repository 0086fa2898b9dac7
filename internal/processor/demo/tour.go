package demo

// The tour: the commands, the words that call them, and the help list.

import (
	"strings"
	"unicode"

	"chatd/internal/processor"
)

// command is one stop of the tour.
type command int

const (
	cmdUnknown command = iota
	cmdHelp
	cmdCard
	cmdSources
	cmdBook
	cmdDelete
	cmdTags
	cmdStream
)

// keywords maps a lower-case word (or its singular, see parseCommand) to
// its command.
var keywords = map[string]command{
	"help": cmdHelp, "command": cmdHelp, "menu": cmdHelp, "tour": cmdHelp, "start": cmdHelp,

	"card": cmdCard, "article": cmdCard, "entity": cmdCard, "node": cmdCard, "teaser": cmdCard,

	"source": cmdSources, "cite": cmdSources, "citation": cmdSources, "reference": cmdSources,

	"book": cmdBook, "booking": cmdBook, "event": cmdBook, "form": cmdBook, "meeting": cmdBook,
	"schedule": cmdBook,

	"delete": cmdDelete, "remove": cmdDelete, "confirm": cmdDelete,

	"tag": cmdTags, "topic": cmdTags, "choose": cmdTags, "multiselect": cmdTags,

	"stream": cmdStream, "story": cmdStream, "streaming": cmdStream,
}

// weakKeywords only count when no keyword above appears anywhere in the
// message, so "show me the topics" is tags, not a card.
var weakKeywords = map[string]command{
	"show": cmdCard, "hi": cmdHelp, "hello": cmdHelp, "hey": cmdHelp,
}

// parseCommand finds the first command word in text.
func parseCommand(text string) command {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, table := range []map[string]command{keywords, weakKeywords} {
		for _, w := range words {
			if c, ok := table[w]; ok {
				return c
			}
			// Forgive plurals: cards, sources, tags, topics, events.
			if c, ok := table[strings.TrimSuffix(w, "s")]; ok {
				return c
			}
		}
	}
	return cmdUnknown
}

func (p *Processor) answer(text string) (reply, error) {
	switch parseCommand(text) {
	case cmdHelp:
		return helpReply(""), nil
	case cmdCard:
		return p.cardReply(), nil
	case cmdSources:
		return p.sourcesReply(), nil
	case cmdBook:
		return pauseReply(stepBook, bookMessage, bookSchema, bookMeta(), bookProse)
	case cmdDelete:
		return pauseReply(stepDelete, deleteMessage, deleteSchema, nil, deleteProse)
	case cmdTags:
		return pauseReply(stepTags, tagsMessage, tagsSchema, nil, tagsProse)
	case cmdStream:
		return storyReply(), nil
	}
	if strings.TrimSpace(text) == "" {
		return helpReply("Thanks — I can't look inside attachments, but here is what I can show you."), nil
	}
	return helpReply("I'm not sure what you mean, but I'm happy to show you around."), nil
}

const helpText = `Here is what I can show you — type any of these:
- card: an entity card (a Drupal article shown as a teaser)
- sources: an answer with numbered citations and links
- book: a form with a title, date, attendee count, room, email and a checkbox
- delete: a yes/no confirmation
- tags: a multi-select (pick one to three topics)
- stream: a longer reply streamed in small pieces
- help: this list`

func helpReply(preface string) reply {
	text := helpText
	if preface != "" {
		text = preface + "\n\n" + helpText
	}
	return reply{out: processor.Output{Text: text, Meta: suggestMeta(cmdHelp)}}
}
