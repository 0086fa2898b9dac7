package elicit

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"chatd/internal/blocks"
)

// Action is the user's answer to an elicitation, the action of an MCP
// ElicitResult.
type Action string

// The three actions of MCP ElicitResult.
const (
	// Accept means the user submitted the form; Result.Content holds it.
	Accept Action = "accept"
	// Decline means the user explicitly refused to answer.
	Decline Action = "decline"
	// Cancel means the user dismissed the question without choosing.
	Cancel Action = "cancel"
)

// Result is an MCP ElicitResult: the action and, for accept, the submitted
// content keyed by property name. The API decodes Content with
// json.Decoder.UseNumber, so numbers arrive as json.Number; float64 and the
// integer types are accepted too, for results built in Go.
type Result struct {
	Action  Action         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// Validate checks res against the request's schema, as the package comment
// describes, and returns nil or a *blocks.ValidationError holding every
// violation, each with Field set to the property name ("email"), to "action"
// or to "content".
// Defaults are never filled in: a missing optional property stays missing.
//
// Validate returns another kind of error only for a Request whose schema was
// never checked (built as a struct literal) and turns out to be invalid —
// a fault of the server, not of the result.
func (r *Request) Validate(res Result) error {
	if r.IsURL() {
		return validateURLResult(res)
	}
	s, err := r.parsed()
	if err != nil {
		return fmt.Errorf("elicit: request holds an invalid schema: %v", err) // not %w: the API must not answer 422 for this
	}
	var c collector
	switch res.Action {
	case Accept:
		s.validateContent(res.Content, &c)
	case Decline, Cancel:
		if len(res.Content) > 0 {
			c.add("content", fmt.Sprintf("must be absent or empty when action is %q", res.Action))
		}
	default:
		c.add("action", `must be one of "accept", "decline" or "cancel"`)
	}
	return c.err()
}

func (s *schema) validateContent(content map[string]any, c *collector) {
	found := 0
	for i := range s.props {
		p := &s.props[i]
		v, ok := content[p.name]
		if !ok {
			if p.required {
				c.add(p.name, "is required")
			}
			continue
		}
		found++
		p.check(v, p.name, c)
	}
	if found == len(content) {
		return
	}
	var extra []string
	for k := range content {
		if _, ok := s.index[k]; !ok {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra) // map order is random; errors should not be
	for _, k := range extra {
		c.add(k, "is not a declared property")
	}
}

// check records in c every way v fails the property, under field.
func (p *property) check(v any, field string, c *collector) {
	switch p.kind {
	case kindString:
		s, ok := v.(string)
		if !ok {
			c.add(field, "must be a string, got "+blocks.KindOf(v))
			return
		}
		p.checkString(s, field, c)
	case kindNumber, kindInteger:
		p.checkNumber(v, field, c)
	case kindBoolean:
		if _, ok := v.(bool); !ok {
			c.add(field, "must be a boolean, got "+blocks.KindOf(v))
		}
	case kindSelect:
		s, ok := v.(string)
		if !ok {
			c.add(field, "must be a string, got "+blocks.KindOf(v))
			return
		}
		if !p.hasOption(s) {
			c.add(field, p.optionsText)
		}
	case kindMulti:
		switch items := v.(type) {
		case []any:
			p.checkSelection(items, field, c)
		case []string:
			// Results built in Go; the API always decodes to []any.
			conv := make([]any, len(items))
			for i, s := range items {
				conv[i] = s
			}
			p.checkSelection(conv, field, c)
		default:
			c.add(field, "must be an array of strings, got "+blocks.KindOf(v))
		}
	}
}

func (p *property) checkString(s, field string, c *collector) {
	if p.minLen > 0 || (p.maxLen >= 0 && len(s) > p.maxLen) {
		// Lengths count Unicode code points, as JSON Schema does; a byte
		// count is an upper bound, so short strings skip the count.
		n := utf8.RuneCountInString(s)
		if n < p.minLen {
			c.add(field, fmt.Sprintf("must be at least %s long, got %d", plural(p.minLen, "character", "characters"), n))
		}
		if p.maxLen >= 0 && n > p.maxLen {
			c.add(field, fmt.Sprintf("must be at most %s long, got %d", plural(p.maxLen, "character", "characters"), n))
		}
	}
	if p.format != formatNone {
		if detail := checkFormat(p.format, s); detail != "" {
			c.add(field, detail)
		}
	}
}

func (p *property) checkNumber(v any, field string, c *collector) {
	nv, isNumber, ok := toNumber(v)
	switch {
	case !isNumber:
		c.add(field, fmt.Sprintf("must be %s, got %s", p.kind.article(), blocks.KindOf(v)))
		return
	case !ok:
		c.add(field, "must be a finite number within the range of a double")
		return
	}
	if p.kind == kindInteger && !nv.integral {
		c.add(field, "must be an integer")
	}
	if p.hasMin && nv.f < p.min {
		c.add(field, "must be at least "+p.minText)
	}
	if p.hasMax && nv.f > p.max {
		c.add(field, "must be at most "+p.maxText)
	}
}

// checkSelection checks a multi-select value: a set of options within the
// item counts.
func (p *property) checkSelection(items []any, field string, c *collector) {
	n := len(items)
	if n < p.minItems {
		c.add(field, fmt.Sprintf("must have at least %s, got %d", plural(p.minItems, "item", "items"), n))
	}
	if p.maxItems >= 0 && n > p.maxItems {
		c.add(field, fmt.Sprintf("must have at most %s, got %d", plural(p.maxItems, "item", "items"), n))
	}
	if n > len(p.options) {
		// Unique members cannot outnumber the options; saying so once keeps
		// a huge array from producing a huge list of per-item errors.
		c.add(field, fmt.Sprintf("has %d items but there are only %s", n, plural(len(p.options), "option", "options")))
		return
	}
	var seen map[string]int
	for i, item := range items {
		s, ok := item.(string)
		if !ok {
			c.add(field, fmt.Sprintf("item %d must be a string, got %s", i, blocks.KindOf(item)))
			continue
		}
		if !p.hasOption(s) {
			c.add(field, fmt.Sprintf("item %d %s", i, p.optionsText))
			continue
		}
		// n ≤ len(options) ≤ MaxOptions bounds the quadratic scan; a map
		// only pays off for long selections.
		first := -1
		if n > optionSetThreshold {
			if seen == nil {
				seen = make(map[string]int, n)
			}
			if j, dup := seen[s]; dup {
				first = j
			} else {
				seen[s] = i
			}
		} else {
			for j := 0; j < i; j++ {
				if t, ok := items[j].(string); ok && t == s {
					first = j
					break
				}
			}
		}
		if first >= 0 {
			c.add(field, fmt.Sprintf("item %d repeats item %d: selections must be unique", i, first))
		}
	}
}

// validateURLResult checks an answer to a URL-mode question: accept (the
// user consented and finished), decline or cancel, never with content.
func validateURLResult(res Result) error {
	var c collector
	switch res.Action {
	case Accept, Decline, Cancel:
		if len(res.Content) > 0 {
			c.add("content", "must be absent or empty: a URL-mode question has no fields")
		}
	default:
		c.add("action", `must be one of "accept", "decline" or "cancel"`)
	}
	return c.err()
}
