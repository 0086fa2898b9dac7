package elicit

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"chatd/internal/blocks"
)

// optionList checks the array holding a select's options and returns its
// elements.
func (l Limits) optionList(path string, raw json.RawMessage, c *collector) ([]json.RawMessage, bool) {
	elems, ok := decodeArray(raw)
	switch {
	case !ok:
		c.add(path, "must be an array, got "+blocks.KindOf(raw))
		return nil, false
	case len(elems) == 0:
		c.add(path, "must not be empty: a select needs at least one option")
		return nil, false
	case len(elems) > l.MaxOptions:
		c.add(path, fmt.Sprintf("%d options exceed the limit of %d", len(elems), l.MaxOptions))
		return nil, false
	}
	return elems, true
}

// addOption records one option value, refusing duplicates and oversized
// values.
func (l Limits) addOption(path string, value string, seen map[string]bool, c *collector) bool {
	if seen[value] {
		c.add(path, fmt.Sprintf("duplicate value %s", quote(value)))
		return false
	}
	seen[value] = true
	if n := utf8.RuneCountInString(value); n > l.MaxTextLen {
		c.add(path, fmt.Sprintf("%d characters exceed the limit of %d", n, l.MaxTextLen))
		return false
	}
	return true
}

// parseEnum checks an enum array: non-empty, unique strings.
func (l Limits) parseEnum(path string, raw json.RawMessage, c *collector) []string {
	elems, ok := l.optionList(path, raw, c)
	if !ok {
		return nil
	}
	options := make([]string, 0, len(elems))
	seen := make(map[string]bool, len(elems))
	for i, e := range elems {
		ep := fmt.Sprintf("%s[%d]", path, i)
		v, ok := decodeString(e)
		if !ok {
			c.add(ep, "enum values must be strings, got "+blocks.KindOf(e))
			continue
		}
		if l.addOption(ep, v, seen, c) {
			options = append(options, v)
		}
	}
	return options
}

// parseEnumNames checks the legacy display names of an enum: strings, one
// per value.
func (l Limits) parseEnumNames(path string, raw json.RawMessage, nValues int, c *collector) {
	elems, ok := decodeArray(raw)
	if !ok {
		c.add(path, "must be an array of strings, got "+blocks.KindOf(raw))
		return
	}
	if len(elems) != nValues {
		c.add(path, fmt.Sprintf("has %s for %s: they must pair up",
			plural(len(elems), "name", "names"), plural(nValues, "enum value", "enum values")))
	}
	for i, e := range elems {
		l.checkText(fmt.Sprintf("%s[%d]", path, i), e, c)
	}
}

// parseOptions checks a titled option list, oneOf or items.anyOf: each
// option exactly {const, title}, consts unique strings.
func (l Limits) parseOptions(path string, raw json.RawMessage, c *collector) []string {
	elems, ok := l.optionList(path, raw, c)
	if !ok {
		return nil
	}
	options := make([]string, 0, len(elems))
	seen := make(map[string]bool, len(elems))
	for i, e := range elems {
		ep := fmt.Sprintf("%s[%d]", path, i)
		members, dups, ok := decodeObject(e)
		if !ok {
			c.add(ep, "must be an object {const, title}, got "+blocks.KindOf(e))
			continue
		}
		for _, d := range dups {
			c.add(ep+"."+d, "keyword appears more than once")
		}
		var cnst, title json.RawMessage
		for _, m := range members {
			switch m.key {
			case "const":
				cnst = m.val
			case "title":
				title = m.val
			default:
				c.add(ep+"."+m.key, rejectKeyword(m.key))
			}
		}
		if title == nil {
			c.add(ep+".title", "is required")
		} else {
			l.checkText(ep+".title", title, c)
		}
		if cnst == nil {
			c.add(ep+".const", "is required")
			continue
		}
		v, ok := decodeString(cnst)
		if !ok {
			c.add(ep+".const", "option values must be strings, got "+blocks.KindOf(cnst))
			continue
		}
		if l.addOption(ep+".const", v, seen, c) {
			options = append(options, v)
		}
	}
	return options
}

// itemTypePlural names arrays of a refused item type.
var itemTypePlural = map[string]string{
	"object": "objects", "number": "numbers", "integer": "integers",
	"boolean": "booleans", "array": "arrays", "null": "nulls",
}

// parseItems checks a multi-select's items: {type:"string", enum} or
// {anyOf:[{const, title}]}; anything else would be an array the handful of
// portable widgets cannot render.
func (l Limits) parseItems(path string, raw json.RawMessage, c *collector) []string {
	members, dups, ok := decodeObject(raw)
	if !ok {
		c.add(path, "must be an object with enum or anyOf options, got "+blocks.KindOf(raw))
		return nil
	}
	for _, d := range dups {
		c.add(path+"."+d, "keyword appears more than once")
	}
	var typ, enum, anyOf json.RawMessage
	for _, m := range members {
		switch m.key {
		case "type":
			typ = m.val
		case "enum":
			enum = m.val
		case "anyOf":
			anyOf = m.val
		default:
			c.add(path+"."+m.key, rejectKeyword(m.key))
		}
	}
	if typ != nil {
		t, ok := decodeString(typ)
		switch {
		case !ok:
			c.add(path+".type", "must be a single type name, got "+blocks.KindOf(typ))
			return nil
		case t != "string":
			if pl, known := itemTypePlural[t]; known {
				c.add(path+".type", fmt.Sprintf("arrays of %s are not supported: multi-select items must be strings", pl))
			} else {
				c.add(path+".type", fmt.Sprintf("unsupported item type %s: multi-select items must be strings", quote(t)))
			}
			return nil
		}
	}
	switch {
	case enum != nil && anyOf != nil:
		c.add(path+".anyOf", "cannot be combined with enum: a multi-select uses one or the other")
	case enum != nil:
		if typ == nil {
			c.add(path+".type", `is required with enum and must be "string"`)
		}
		return l.parseEnum(path+".enum", enum, c)
	case anyOf != nil:
		return l.parseOptions(path+".anyOf", anyOf, c)
	default:
		c.add(path, "must list the options: a multi-select needs items.enum or items.anyOf")
	}
	return nil
}

// indexOptions prepares membership checks and the detail listing the
// options.
func (p *property) indexOptions() {
	if p.options == nil {
		return
	}
	if len(p.options) > optionSetThreshold {
		p.optionSet = make(map[string]struct{}, len(p.options))
		for _, o := range p.options {
			p.optionSet[o] = struct{}{}
		}
	}
	if len(p.options) > maxListedOptions {
		p.optionsText = fmt.Sprintf("must be one of the %d allowed options", len(p.options))
		return
	}
	quoted := make([]string, len(p.options))
	for i, o := range p.options {
		quoted[i] = quote(o)
	}
	p.optionsText = "must be one of " + strings.Join(quoted, ", ")
}

func (p *property) hasOption(v string) bool {
	if p.optionSet != nil {
		_, ok := p.optionSet[v]
		return ok
	}
	for _, o := range p.options {
		if o == v {
			return true
		}
	}
	return false
}
