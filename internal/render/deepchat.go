package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

// Question is a paused turn's elicitation as a deep-chat message shows it:
// an HTML form built from its requested schema, answered through chatd.js.
type Question struct {
	// ID is the elicitation's ID, which the form carries for chatd.js.
	ID      string
	Message string
	// Schema is the elicitation's requestedSchema.
	Schema json.RawMessage
	// Buttons, when set, are the titles of the answers the question can be
	// given with one click (a confirm, a single choice, a page's Done and
	// Cancel); the form then shows them as suggestion buttons instead of
	// its fields.
	Buttons []string
	// URL is the page a URL-mode question sends the user to. The form then
	// shows it as a consent card: the whole URL with its host in bold,
	// opened only by the user's click, in a new tab without opener or
	// referrer; or, for a URL elicit.CheckURL refuses, no link at all.
	URL string
}

// DeepChat renders a message for the deep-chat web component: Message's
// rendering with its suggested replies as deep-chat suggestion buttons,
// and q, when not nil, as a form inside the message.
func (r *Renderer) DeepChat(m blocks.Message, q *Question) (string, error) {
	v := deepChatView{
		messageView: messageView{
			Role:       "unknown",
			Paragraphs: paragraphs(m.Text),
			Blocks:     r.blockViews(m.ContentBlocks),
			Citations:  r.citations(m.Meta[blocks.MetaCitations]),
			Suggested:  suggestedReplies(m.Meta[blocks.MetaSuggestedReplies]),
		},
	}
	if m.Role == blocks.RoleUser || m.Role == blocks.RoleAssistant {
		v.Role = string(m.Role)
	}
	if q == nil && len(v.Blocks) == 0 && len(v.Citations) == 0 && len(v.Suggested) == 0 {
		// Most replies are text alone, and a streamed reply is rendered
		// once more at its end: without the template, which costs more
		// than the rest of the stream's mapping.
		return plainMessage(v.Role, v.Paragraphs), nil
	}
	if q != nil {
		qv := questionView{ID: q.ID, Message: q.Message, Buttons: q.Buttons}
		switch {
		case q.URL != "":
			qv.Consent = consent(q.URL)
		case len(q.Buttons) == 0:
			qv.Fields = fieldViews(q.Schema)
		}
		v.Question = &qv
	}
	return r.execute("deepchat", v)
}

type deepChatView struct {
	messageView
	Question *questionView
}

type questionView struct {
	ID, Message string
	Fields      []fieldView
	Buttons     []string
	Consent     *consentView
}

// consentView is a URL-mode question's page as its card shows it. Href is
// empty for a URL the card must not link to; Scheme, Host and Rest split
// the URL as written so that its host can be emphasised.
type consentView struct {
	Href, Scheme, Host, Rest string
}

func consent(pageURL string) *consentView {
	if elicit.CheckURL(pageURL) != nil {
		return &consentView{}
	}
	v := &consentView{Href: pageURL, Rest: pageURL}
	u, err := url.Parse(pageURL)
	if err != nil {
		return v
	}
	// CheckURL passed: the URL is scheme://host..., without userinfo.
	n := len(u.Scheme) + len("://")
	if len(pageURL) >= n && strings.HasPrefix(pageURL[n:], u.Host) {
		v.Scheme, v.Host, v.Rest = pageURL[:n], u.Host, pageURL[n+len(u.Host):]
	}
	return v
}

// fieldView is one property of a requested schema as a form control. Kind
// is boolean, select, multi, or input (with InputType).
type fieldView struct {
	Name, Label, Description string
	Kind, InputType          string
	Required, Checked        bool
	Value, Step, Min, Max    string
	Options                  []optionView
}

type optionView struct {
	Value, Title string
	Selected     bool
}

// SchemaProperty is the part of a requested schema's property the forms
// and chatd's one-click answers read.
type SchemaProperty struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	Enum        []string        `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []SchemaOption  `json:"oneOf"`
	Items       *SchemaProperty `json:"items"`
	AnyOf       []SchemaOption  `json:"anyOf"`
	Default     json.RawMessage `json:"default"`
	Minimum     *json.Number    `json:"minimum"`
	Maximum     *json.Number    `json:"maximum"`
}

// SchemaOption is one titled option of a oneOf or anyOf list.
type SchemaOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// Schema is a requested schema as the forms read it: its properties in
// their order, and which are required.
type Schema struct {
	Names      []string
	Properties map[string]SchemaProperty
	Required   map[string]bool
}

// ReadSchema reads a requested schema; a schema it cannot read has no
// properties. Properties keep the order the schema gives them in.
func ReadSchema(raw json.RawMessage) Schema {
	var s struct {
		Properties map[string]SchemaProperty `json:"properties"`
		Required   []string                  `json:"required"`
	}
	_ = json.Unmarshal(raw, &s)
	out := Schema{Properties: s.Properties, Required: map[string]bool{}}
	for _, name := range s.Required {
		out.Required[name] = true
	}
	out.Names = propertyOrder(raw, s.Properties)
	return out
}

// propertyOrder lists the schema's property names as they appear in it.
func propertyOrder(raw json.RawMessage, props map[string]SchemaProperty) []string {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(raw, &s)
	var names []string
	dec := json.NewDecoder(bytesReader(s.Properties))
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			name, _ := tok.(string)
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				break
			}
			if _, ok := props[name]; ok {
				names = append(names, name)
			}
		}
	}
	if len(names) != len(props) {
		names = names[:0]
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	return names
}

// Options lists a single-select property's options as value and title:
// its oneOf, or its enum titled by enumNames, else by the value.
func (p SchemaProperty) Options() []SchemaOption {
	if len(p.OneOf) > 0 {
		out := make([]SchemaOption, len(p.OneOf))
		for i, o := range p.OneOf {
			out[i] = SchemaOption{Const: o.Const, Title: firstNonEmpty(o.Title, o.Const)}
		}
		return out
	}
	out := make([]SchemaOption, len(p.Enum))
	for i, v := range p.Enum {
		title := v
		if i < len(p.EnumNames) && p.EnumNames[i] != "" {
			title = p.EnumNames[i]
		}
		out[i] = SchemaOption{Const: v, Title: title}
	}
	return out
}

// IsSingleSelect reports whether p is a string with a fixed set of options.
func (p SchemaProperty) IsSingleSelect() bool {
	return p.Type == "string" && (len(p.OneOf) > 0 || len(p.Enum) > 0)
}

var inputTypes = map[string]string{"email": "email", "uri": "url", "date": "date", "date-time": "datetime-local", "time": "time"}

func fieldViews(raw json.RawMessage) []fieldView {
	s := ReadSchema(raw)
	out := make([]fieldView, 0, len(s.Names))
	for _, name := range s.Names {
		p := s.Properties[name]
		f := fieldView{Name: name, Label: firstNonEmpty(p.Title, name), Description: p.Description, Required: s.Required[name]}
		var def any
		_ = json.Unmarshal(p.Default, &def)
		switch {
		case p.Type == "boolean":
			f.Kind = "boolean"
			f.Checked = def == true
		case p.IsSingleSelect():
			f.Kind = "select"
			for _, o := range p.Options() {
				f.Options = append(f.Options, optionView{Value: o.Const, Title: o.Title, Selected: def == o.Const})
			}
		case p.Type == "array" && p.Items != nil:
			f.Kind = "multi"
			opts := p.Items.Options()
			if len(p.Items.AnyOf) > 0 {
				opts = p.Items.AnyOf
			}
			defs, _ := def.([]any)
			for _, o := range opts {
				sel := false
				for _, d := range defs {
					sel = sel || d == o.Const
				}
				f.Options = append(f.Options, optionView{Value: o.Const, Title: firstNonEmpty(o.Title, o.Const), Selected: sel})
			}
		case p.Type == "number" || p.Type == "integer":
			f.Kind, f.InputType, f.Step = "input", "number", "any"
			if p.Type == "integer" {
				f.Step = "1"
			}
			if p.Minimum != nil {
				f.Min = p.Minimum.String()
			}
			if p.Maximum != nil {
				f.Max = p.Maximum.String()
			}
			if def != nil {
				f.Value = fmt.Sprint(def)
			}
		default:
			f.Kind, f.InputType = "input", "text"
			if t, ok := inputTypes[p.Format]; ok {
				f.InputType = t
			}
			if d, ok := def.(string); ok {
				f.Value = d
			}
		}
		out = append(out, f)
	}
	return out
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// plainMessage is the "deepchat" template's output for a message of text
// alone, byte for byte.
func plainMessage(role string, paras [][]string) string {
	var b strings.Builder
	b.WriteString(`<div class="chatd-message chatd-`)
	b.WriteString(role)
	b.WriteString(`">`)
	for _, p := range paras {
		b.WriteString("<p>")
		for i, line := range p {
			if i > 0 {
				b.WriteString("<br>")
			}
			writeEscaped(&b, line)
		}
		b.WriteString("</p>")
	}
	b.WriteString("</div>")
	return b.String()
}

// writeEscaped writes s escaped as html/template escapes text.
func writeEscaped(b *strings.Builder, s string) {
	last := 0
	for i := 0; i < len(s); i++ {
		var repl string
		switch s[i] {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		default:
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(repl)
		last = i + 1
	}
	b.WriteString(s[last:])
}
