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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
)

// DefaultDelay is the pause between streamed chunks: long enough that a
// client watching the stream (curl -N) sees text arrive in pieces, short
// enough that no reply takes noticeably long.
const DefaultDelay = 20 * time.Millisecond

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

// deleteCount is how many items the delete confirmation is about.
const deleteCount = 10

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

// source is one reference of the sourced answer.
type source struct {
	uri, name, title, description, snippet string
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

func (p *Processor) buildFixed() error {
	// The label as the link title gives block-unaware renderers something
	// better to show than "node/42".
	card, err := blocks.EntityCardWith(
		blocks.EntityRef{EntityType: cardEntityType, ID: cardID, UUID: cardUUID, ViewMode: cardViewMode},
		blocks.LinkOptions{Title: cardTitle},
	)
	if err != nil {
		return fmt.Errorf("demo: entity card: %w", err)
	}
	p.card = card
	p.links = make([]blocks.ContentBlock, len(p.sources))
	for i, s := range p.sources {
		link, err := blocks.ResourceLink(s.uri, s.name, blocks.LinkOptions{
			Title:       s.title,
			Description: s.description,
			MimeType:    "text/html",
		})
		if err != nil {
			return fmt.Errorf("demo: source %d: %w", i+1, err)
		}
		p.links[i] = link
	}
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

// suggestion is one suggested reply; each one routes back to a command
// through parseCommand, which the tests check.
type suggestion struct {
	text string
	cmd  command
}

var allSuggestions = []suggestion{
	{"Show me a card", cmdCard},
	{"Cite your sources", cmdSources},
	{"Book an event", cmdBook},
	{"Delete 10 items", cmdDelete},
	{"Pick topics", cmdTags},
	{"Stream a story", cmdStream},
	{"Help", cmdHelp},
}

// suggestions returns the suggested-replies value: every command except
// the one just shown, so the tour moves on.
func suggestions(except command) []string {
	out := make([]string, 0, len(allSuggestions))
	for _, s := range allSuggestions {
		if s.cmd != except {
			out = append(out, s.text)
		}
	}
	return out
}

func suggestMeta(except command) map[string]any {
	return map[string]any{blocks.MetaSuggestedReplies: suggestions(except)}
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

// demoSources back the sourced answer; block_index in the citations points
// at their resource_link blocks, which are the reply's only blocks.
var demoSources = []source{
	{
		uri:         "https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation",
		name:        "mcp-elicitation",
		title:       "Elicitation — Model Context Protocol 2025-11-25",
		description: "How a server asks the user for structured input during a task.",
		snippet:     "Elicitation allows servers to request additional information from users through the client during interactions.",
	},
	{
		uri:         "https://modelcontextprotocol.io/specification/2025-06-18/server/tools",
		name:        "mcp-tools",
		title:       "Tools — Model Context Protocol 2025-06-18",
		description: "Tool results and the content block types they carry.",
		snippet:     "Tool results may contain text, images, audio, resource links and embedded resources.",
	},
	{
		uri:         "https://www.drupal.org/project/ai",
		name:        "drupal-ai",
		title:       "AI (Artificial Intelligence) — Drupal module",
		description: "The Drupal AI module, whose chat conventions chatd follows.",
		snippet:     "The AI module provides a unified framework for integrating AI providers into Drupal.",
	},
}

const sourcesText = `Q: How does chatd ask a user a structured question?
A: It pauses the turn with an MCP elicitation: a message plus a flat JSON schema that the frontend renders as a form [1]. The answer comes back as accept, decline or cancel, and the processor resumes where it left off. Replies can also carry MCP content blocks such as resource links [2], following the conventions of the Drupal AI module [3].

Sources:
[1] %s — %s
[2] %s — %s
[3] %s — %s`

func (p *Processor) sourcesReply() reply {
	args := make([]any, 0, 2*len(p.sources))
	citations := make([]any, len(p.sources))
	for i, s := range p.sources {
		args = append(args, s.title, s.uri)
		citations[i] = map[string]any{
			"uri":         s.uri,
			"title":       s.title,
			"snippet":     s.snippet,
			"block_index": i,
		}
	}
	// The status item streamed while the answer arrives is replaced (same
	// id) by the outcome on the message.
	meta := statusMeta("search", fmt.Sprintf("Found %d sources", len(p.sources)), "done")
	meta[blocks.MetaSuggestedReplies] = suggestions(cmdSources)
	meta[blocks.MetaCitations] = citations
	return reply{
		out: processor.Output{
			Text:   fmt.Sprintf(sourcesText, args...),
			Blocks: append([]blocks.ContentBlock(nil), p.links...),
			Meta:   meta,
		},
		progress: statusMeta("search", "Searching the documentation", "running"),
	}
}

const storyText = `This reply is streamed. chatd sends each piece to the client as a text.delta event the moment the processor produces it, so a frontend can show the answer growing word by word instead of waiting for the whole turn. When the processor finishes, a final turn.completed event carries the complete message, its content blocks and its _meta, exactly as history will keep it. If the client disconnects halfway, the turn still runs to completion and is saved, so reloading the thread shows the full reply. Try it with curl -N and an Accept: text/event-stream header to watch the pieces arrive.`

func storyReply() reply {
	return reply{out: processor.Output{Text: storyText, Meta: suggestMeta(cmdStream)}}
}

// statusMeta returns _meta holding a drupal.org/ai.status_item: a short
// progress or outcome line a frontend may show beside the message; state is
// running, done or failed.
func statusMeta(id, label, state string) map[string]any {
	return map[string]any{blocks.MetaStatusItem: map[string]any{
		"id":    id,
		"label": label,
		"state": state,
	}}
}

// The steps a paused turn can be at, saved as its state.
const (
	stepBook   = "book"
	stepDelete = "delete"
	stepTags   = "tags"
)

type pauseState struct {
	Step string `json:"step"`
}

// pauseReply asks the user a question. Text restates it in prose for
// clients that cannot render the form.
func pauseReply(step, message string, schema json.RawMessage, meta map[string]any, prose string) (reply, error) {
	// A fresh request per pause: each one carries its own elicitation ID.
	req, err := elicit.NewRequest(message, schema, meta)
	if err != nil {
		return reply{}, fmt.Errorf("demo: %s request: %w", step, err)
	}
	state, err := json.Marshal(pauseState{Step: step})
	if err != nil {
		return reply{}, fmt.Errorf("demo: %s state: %w", step, err)
	}
	return reply{out: processor.Output{
		Text:  prose,
		Pause: &processor.Pause{Request: req, State: state},
	}}, nil
}

const bookMessage = "Let's book an event. What is it, when, for how many people and in which room?"

const bookProse = "Let's book an event. I need a title (up to 100 characters), a date, the number of " +
	"attendees (1 to 50) and a room: Aurora, Borealis or Cosmos. Optionally, an email address for " +
	"the confirmation, and whether to notify the attendees (yes unless you say otherwise)."

var bookSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "title": {"type": "string", "title": "Title", "description": "What the event is called.", "minLength": 1, "maxLength": 100},
    "date": {"type": "string", "title": "Date", "format": "date"},
    "attendees": {"type": "integer", "title": "Attendees", "description": "How many people are coming.", "minimum": 1, "maximum": 50},
    "notify": {"type": "boolean", "title": "Notify attendees", "default": true},
    "room": {"type": "string", "title": "Room", "oneOf": [
      {"const": "Aurora", "title": "Aurora (ground floor, 12 seats)"},
      {"const": "Borealis", "title": "Borealis (first floor, 24 seats)"},
      {"const": "Cosmos", "title": "Cosmos (top floor, 50 seats)"}
    ]},
    "email": {"type": "string", "title": "Confirmation email", "format": "email"}
  },
  "required": ["title", "date", "attendees", "room"]
}`)

// bookMeta returns the widget hints of the booking form; a fresh map each
// time because the request takes ownership of it.
func bookMeta() map[string]any {
	return map[string]any{blocks.MetaWidgets: map[string]any{
		"date":      map[string]any{"widget": "datepicker"},
		"attendees": map[string]any{"widget": "number", "step": 1},
		"room":      map[string]any{"widget": "radios"},
		"notify":    map[string]any{"widget": "checkbox"},
	}}
}

var deleteMessage = fmt.Sprintf("Delete %d items?", deleteCount)

var deleteProse = fmt.Sprintf("Delete %d items? This cannot be undone.", deleteCount)

// deleteSchema asks nothing but the question itself: accept is yes,
// decline is no, cancel dismisses it. A schema-free confirm leaves a
// frontend nothing to fill in and no default to misread.
var deleteSchema = json.RawMessage(`{"type": "object", "properties": {}}`)

const tagsMessage = "Which topics interest you? Pick one to three."

var tagsProse = "Which topics interest you? Pick one to three of: " + strings.Join(topicTitles(), ", ") + "."

// topics are the options of the multi-select.
var topics = []struct{ value, title string }{
	{"blocks", "Content blocks"},
	{"citations", "Citations"},
	{"elicitation", "Elicitation"},
	{"streaming", "Streaming"},
	{"history", "History"},
}

func topicTitles() []string {
	titles := make([]string, len(topics))
	for i, t := range topics {
		titles[i] = t.title
	}
	return titles
}

var tagsSchema = func() json.RawMessage {
	options := make([]map[string]string, len(topics))
	for i, t := range topics {
		options[i] = map[string]string{"const": t.value, "title": t.title}
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"topics": map[string]any{
				"type":     "array",
				"title":    "Topics",
				"items":    map[string]any{"anyOf": options},
				"minItems": 1,
				"maxItems": 3,
			},
		},
		"required": []string{"topics"},
	}
	// Marshalling maps of strings and ints cannot fail.
	data, _ := json.Marshal(schema)
	return data
}()

// resume continues a paused turn from its saved step.
func (p *Processor) resume(r *processor.Resume) (reply, error) {
	var st pauseState
	if err := json.Unmarshal(r.State, &st); err != nil {
		// The state is ours, so this is not the user's fault; say so
		// rather than failing the turn, which would leave the user with
		// nothing to do next.
		return helpReply("Sorry, I lost track of what that answer was for."), nil
	}
	switch st.Step {
	case stepBook:
		return bookResult(r.Result)
	case stepDelete:
		return deleteResult(r.Result), nil
	case stepTags:
		return tagsResult(r.Result), nil
	}
	return helpReply("Sorry, I lost track of what that answer was for."), nil
}

func bookResult(res elicit.Result) (reply, error) {
	switch res.Action {
	case elicit.Decline:
		return reply{out: processor.Output{
			Text: "OK, no booking made. Want to try something else?",
			Meta: suggestMeta(cmdUnknown),
		}}, nil
	case elicit.Accept:
	default:
		return reply{out: processor.Output{
			Text: "Booking cancelled — nothing was booked.",
			Meta: suggestMeta(cmdUnknown),
		}}, nil
	}
	title, _ := res.String("title")
	date, _ := res.String("date")
	room, _ := res.String("room")
	email, _ := res.String("email")
	attendees, okAttendees := res.Int("attendees")
	// chatd never fills in defaults, so the schema's default applies here.
	notify := true
	if v, ok := res.Bool("notify"); ok {
		notify = v
	}
	if title == "" || date == "" || room == "" || !okAttendees {
		// chatd validates answers before resuming, so this only happens
		// if the form changed under a pending request.
		return reply{out: processor.Output{
			Text: "That booking was missing a title, date, room or attendee count, so nothing was booked. Try again?",
			Meta: map[string]any{blocks.MetaSuggestedReplies: []string{"Book an event", "Help"}},
		}}, nil
	}

	people := "people"
	if attendees == 1 {
		people = "person"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Booked %q on %s in %s for %d %s.", title, date, room, attendees, people)
	switch {
	case notify && email != "":
		fmt.Fprintf(&b, " Attendees will be notified, and a confirmation goes to %s.", email)
	case notify:
		b.WriteString(" Attendees will be notified.")
	case email != "":
		fmt.Fprintf(&b, " Attendees won't be notified; a confirmation goes to %s.", email)
	default:
		b.WriteString(" Attendees won't be notified.")
	}

	id, uid := eventIdentity(title, date, room, attendees)
	card, err := blocks.EntityCardWith(
		blocks.EntityRef{EntityType: "event", ID: id, UUID: uid, ViewMode: cardViewMode},
		blocks.LinkOptions{Title: title},
	)
	if err != nil {
		return reply{}, fmt.Errorf("demo: event card: %w", err)
	}
	fmt.Fprintf(&b, " The event is entity:event/%s.", id)

	meta := statusMeta("booking", "Event booked", "done")
	meta[blocks.MetaSuggestedReplies] = suggestions(cmdBook)
	return reply{out: processor.Output{
		Text:   b.String(),
		Blocks: []blocks.ContentBlock{card},
		Meta:   meta,
	}}, nil
}

// eventIdentity derives the booked event's id and UUID from what was booked,
// so the same booking always yields the same entity without any counter.
func eventIdentity(title, date, room string, attendees int64) (id, uid string) {
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%d", title, date, room, attendees)
	sum := sha256.Sum256([]byte(key))
	id = hex.EncodeToString(sum[:6])
	uid = uuid.NewSHA1(uuid.NameSpaceURL, []byte("entity:event/"+id)).String()
	return id, uid
}

func deleteResult(res elicit.Result) reply {
	switch res.Action {
	case elicit.Accept:
		meta := statusMeta("delete", fmt.Sprintf("%d items deleted", deleteCount), "done")
		meta[blocks.MetaSuggestedReplies] = suggestions(cmdUnknown)
		return reply{out: processor.Output{
			Text: fmt.Sprintf("Deleted %d items.", deleteCount),
			Meta: meta,
		}}
	case elicit.Decline:
		return reply{out: processor.Output{
			Text: "Nothing was deleted. Your items are safe.",
			Meta: suggestMeta(cmdUnknown),
		}}
	}
	return reply{out: processor.Output{
		Text: "Cancelled — nothing changed.",
		Meta: suggestMeta(cmdUnknown),
	}}
}

func tagsResult(res elicit.Result) reply {
	if res.Action != elicit.Accept {
		return reply{out: processor.Output{
			Text: "No topics chosen — that's fine. What next?",
			Meta: suggestMeta(cmdUnknown),
		}}
	}
	picked, _ := res.Strings("topics")
	var chosen []string
	for _, s := range picked {
		for _, t := range topics {
			if t.value == s {
				chosen = append(chosen, t.title)
			}
		}
	}
	if len(chosen) == 0 {
		return reply{out: processor.Output{
			Text: "No topics chosen — that's fine. What next?",
			Meta: suggestMeta(cmdUnknown),
		}}
	}
	return reply{out: processor.Output{
		Text: "You picked: " + strings.Join(chosen, ", ") + ". Good choices — each one has a stop on this tour.",
		Meta: suggestMeta(cmdTags),
	}}
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
