package deepchat

import (
	"encoding/json"

	"chatd/internal/elicit"
	"chatd/internal/protocol"
	"chatd/internal/render"
)

// Choice is an answer a question can be given with one click: the title of
// its button and the result it stands for.
type Choice struct {
	Title  string
	Result elicit.Result
}

// Choices lists a question's one-click answers: Yes (accept) and No
// (decline) for a confirm; Done (accept: the user visited the page) and
// Cancel for a URL-mode question, only Cancel when its URL is not one chatd
// links to; one per option for a single-choice question (one required
// single-select property, titled by its oneOf title or enumNames entry,
// else the value); none for any other question. params is the
// elicitation's params.
func Choices(params json.RawMessage) []Choice {
	e, ok := protocol.ReadElicitation(params)
	if !ok {
		return nil
	}
	if e.URL != "" {
		cancel := Choice{Title: "Cancel", Result: elicit.Result{Action: elicit.Cancel}}
		if elicit.CheckURL(e.URL) != nil {
			return []Choice{cancel}
		}
		return []Choice{{Title: "Done", Result: elicit.Result{Action: elicit.Accept}}, cancel}
	}
	if e.Confirmation {
		return []Choice{
			{Title: "Yes", Result: elicit.Result{Action: elicit.Accept, Content: map[string]any{}}},
			{Title: "No", Result: elicit.Result{Action: elicit.Decline}},
		}
	}
	s := render.ReadSchema(e.Schema)
	if len(s.Names) != 1 {
		return nil
	}
	name := s.Names[0]
	p := s.Properties[name]
	if !s.Required[name] || !p.IsSingleSelect() {
		return nil
	}
	var out []Choice
	for _, o := range p.Options() {
		out = append(out, Choice{Title: o.Title, Result: elicit.Result{Action: elicit.Accept, Content: map[string]any{name: o.Const}}})
	}
	return out
}

// Match returns the choice whose title is text.
func Match(choices []Choice, text string) (Choice, bool) {
	for _, c := range choices {
		if c.Title == text {
			return c, true
		}
	}
	return Choice{}, false
}

// Question is the question of a paused turn as render shows it, with its
// one-click answers as buttons; nil when params holds none.
func Question(params json.RawMessage) *render.Question {
	e, ok := protocol.ReadElicitation(params)
	if !ok {
		return nil
	}
	q := &render.Question{ID: e.ID, Message: e.Message, Schema: e.Schema, URL: e.URL}
	for _, c := range Choices(params) {
		q.Buttons = append(q.Buttons, c.Title)
	}
	return q
}
