package demo

// Forms: the questions a turn pauses on (the booking form, the delete
// confirmation, the topics multi-select) and the replies to their answers.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
	"chatd/internal/processor"
)

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

// deleteCount is how many items the delete confirmation is about.
const deleteCount = 10

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
	bk, ok := readBooking(res)
	if !ok {
		// chatd validates answers before resuming, so this only happens
		// if the form changed under a pending request.
		return reply{out: processor.Output{
			Text: "That booking was missing a title, date, room or attendee count, so nothing was booked. Try again?",
			Meta: map[string]any{blocks.MetaSuggestedReplies: []string{"Book an event", "Help"}},
		}}, nil
	}
	id, uid := eventIdentity(bk.title, bk.date, bk.room, bk.attendees)
	card, err := blocks.EntityCardWith(
		blocks.EntityRef{EntityType: "event", ID: id, UUID: uid, ViewMode: cardViewMode},
		blocks.LinkOptions{Title: bk.title},
	)
	if err != nil {
		return reply{}, fmt.Errorf("demo: event card: %w", err)
	}
	meta := statusMeta("booking", "Event booked", "done")
	meta[blocks.MetaSuggestedReplies] = suggestions(cmdBook)
	return reply{out: processor.Output{
		Text:   bk.summary() + fmt.Sprintf(" The event is entity:event/%s.", id),
		Blocks: []blocks.ContentBlock{card},
		Meta:   meta,
	}}, nil
}

// booking is what an accepted booking form holds.
type booking struct {
	title, date, room, email string
	attendees                int64
	notify                   bool
}

// readBooking reads an accepted booking form; ok is false when a required
// field is missing.
func readBooking(res elicit.Result) (bk booking, ok bool) {
	bk.title, _ = res.String("title")
	bk.date, _ = res.String("date")
	bk.room, _ = res.String("room")
	bk.email, _ = res.String("email")
	attendees, okAttendees := res.Int("attendees")
	bk.attendees = attendees
	// chatd never fills in defaults, so the schema's default applies here.
	bk.notify = true
	if v, ok := res.Bool("notify"); ok {
		bk.notify = v
	}
	return bk, bk.title != "" && bk.date != "" && bk.room != "" && okAttendees
}

// summary says what was booked and who hears of it.
func (bk booking) summary() string {
	people := "people"
	if bk.attendees == 1 {
		people = "person"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Booked %q on %s in %s for %d %s.", bk.title, bk.date, bk.room, bk.attendees, people)
	switch {
	case bk.notify && bk.email != "":
		fmt.Fprintf(&b, " Attendees will be notified, and a confirmation goes to %s.", bk.email)
	case bk.notify:
		b.WriteString(" Attendees will be notified.")
	case bk.email != "":
		fmt.Fprintf(&b, " Attendees won't be notified; a confirmation goes to %s.", bk.email)
	default:
		b.WriteString(" Attendees won't be notified.")
	}
	return b.String()
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
