package elicit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"chatd/internal/blocks"
)

// propertyFields holds a property's keywords as raw JSON, nil when absent.
type propertyFields struct {
	typ, title, description, def json.RawMessage
	minLength, maxLength, format json.RawMessage
	minimum, maximum             json.RawMessage
	enum, enumNames, oneOf       json.RawMessage
	items, minItems, maxItems    json.RawMessage
	present                      []string
}

// keyword is one JSON Schema keyword a property may use: where parsing puts
// its value, and which property variants allow it.
type keyword struct {
	field   func(*propertyFields) *json.RawMessage
	allowed func(kind propKind, viaOneOf bool) bool
}

func anyKind(propKind, bool) bool { return true }

func onlyKind(kinds ...propKind) func(propKind, bool) bool {
	return func(k propKind, _ bool) bool {
		for _, want := range kinds {
			if k == want {
				return true
			}
		}
		return false
	}
}

// keywords are the keywords the property variants (string, number, integer,
// boolean, single- and multi-select) may use, the one list parseProperty,
// the root's "not at the root" detail and the variant check read; any other
// keyword is unknown.
var keywords = map[string]keyword{
	"type":        {func(f *propertyFields) *json.RawMessage { return &f.typ }, anyKind},
	"title":       {func(f *propertyFields) *json.RawMessage { return &f.title }, anyKind},
	"description": {func(f *propertyFields) *json.RawMessage { return &f.description }, anyKind},
	"default":     {func(f *propertyFields) *json.RawMessage { return &f.def }, anyKind},
	"minLength":   {func(f *propertyFields) *json.RawMessage { return &f.minLength }, onlyKind(kindString)},
	"maxLength":   {func(f *propertyFields) *json.RawMessage { return &f.maxLength }, onlyKind(kindString)},
	"format":      {func(f *propertyFields) *json.RawMessage { return &f.format }, onlyKind(kindString)},
	"minimum":     {func(f *propertyFields) *json.RawMessage { return &f.minimum }, onlyKind(kindNumber, kindInteger)},
	"maximum":     {func(f *propertyFields) *json.RawMessage { return &f.maximum }, onlyKind(kindNumber, kindInteger)},
	"enum":        {func(f *propertyFields) *json.RawMessage { return &f.enum }, func(k propKind, viaOneOf bool) bool { return k == kindSelect && !viaOneOf }},
	"enumNames":   {func(f *propertyFields) *json.RawMessage { return &f.enumNames }, func(k propKind, viaOneOf bool) bool { return k == kindSelect && !viaOneOf }},
	"oneOf":       {func(f *propertyFields) *json.RawMessage { return &f.oneOf }, func(k propKind, viaOneOf bool) bool { return k == kindSelect && viaOneOf }},
	"items":       {func(f *propertyFields) *json.RawMessage { return &f.items }, onlyKind(kindMulti)},
	"minItems":    {func(f *propertyFields) *json.RawMessage { return &f.minItems }, onlyKind(kindMulti)},
	"maxItems":    {func(f *propertyFields) *json.RawMessage { return &f.maxItems }, onlyKind(kindMulti)},
}

// parseProperty checks one property and returns it parsed; ok is false when
// it violated the restriction (the violations are in c).
func parseProperty(name string, raw json.RawMessage, l Limits, c *collector) (property, bool) {
	path := schemaRoot + ".properties." + name
	before := c.len()
	f, ok := readPropertyFields(path, raw, c)
	if !ok {
		return property{}, false
	}
	p := property{name: name, maxLen: -1, maxItems: -1}
	viaOneOf, ok := p.parseType(path, f, c)
	if !ok {
		return property{}, false
	}
	p.checkKeywords(path, f, viaOneOf, c)
	l.checkText(path+".title", f.title, c)
	p.title, _ = decodeString(f.title)
	l.checkText(path+".description", f.description, c)
	l.parseVariant(&p, path, f, viaOneOf, c)
	if c.len() > before {
		return property{}, false
	}
	p.indexOptions()
	p.checkDefault(path, f.def, c)
	return p, c.len() == before
}

// readPropertyFields sorts a property's members into its keywords, reporting
// repeated and unknown ones; ok is false when the property is not an object.
func readPropertyFields(path string, raw json.RawMessage, c *collector) (propertyFields, bool) {
	members, dups, ok := decodeObject(raw)
	if !ok {
		c.add(path, "must be a JSON object, got "+blocks.KindOf(raw))
		return propertyFields{}, false
	}
	for _, d := range dups {
		c.add(path+"."+d, "keyword appears more than once")
	}
	var f propertyFields
	for _, m := range members {
		kw, known := keywords[m.key]
		if !known {
			c.add(path+"."+m.key, rejectKeyword(m.key))
			continue
		}
		*kw.field(&f) = m.val
		f.present = append(f.present, m.key)
	}
	return f, true
}

// parseType sets p.kind from the type keyword and, for a string, from the
// presence of enum or oneOf; viaOneOf tells a titled single-select from an
// enum one. ok is false when the type rules the property out, since no other
// keyword can be judged without it.
func (p *property) parseType(path string, f propertyFields, c *collector) (viaOneOf, ok bool) {
	if f.typ == nil {
		c.add(path+".type", "is required")
		return false, false
	}
	t, ok := decodeString(f.typ)
	if !ok {
		c.add(path+".type", "must be a single type name, got "+blocks.KindOf(f.typ))
		return false, false
	}
	switch t {
	case "string":
		p.kind = kindString
		if f.enum != nil || f.oneOf != nil {
			p.kind = kindSelect
			viaOneOf = f.enum == nil
		}
	case "number":
		p.kind = kindNumber
	case "integer":
		p.kind = kindInteger
	case "boolean":
		p.kind = kindBoolean
	case "array":
		p.kind = kindMulti
	case "object":
		c.add(path+".type", "nested objects are not supported")
		return false, false
	default:
		c.add(path+".type", fmt.Sprintf("unsupported type %s", quote(t)))
		return false, false
	}
	return viaOneOf, true
}

// checkKeywords reports the keywords present that p's variant does not
// allow.
func (p *property) checkKeywords(path string, f propertyFields, viaOneOf bool, c *collector) {
	for _, key := range f.present {
		if keywords[key].allowed(p.kind, viaOneOf) {
			continue
		}
		if key == "oneOf" && f.enum != nil {
			c.add(path+".oneOf", "cannot be combined with enum: a single-select uses one or the other")
			continue
		}
		c.add(path+"."+key, fmt.Sprintf("keyword %q is not allowed on %s property", key, p.kind.article()))
	}
}

// parseVariant parses the keywords particular to p's kind: lengths and
// format, bounds, or options.
func (l Limits) parseVariant(p *property, path string, f propertyFields, viaOneOf bool, c *collector) {
	switch p.kind {
	case kindString:
		p.parseLengths(path, f, c)
		p.parseFormat(path+".format", f.format, c)
	case kindNumber, kindInteger:
		p.parseBounds(path, f, c)
	case kindSelect:
		if viaOneOf {
			p.options = l.parseOptions(path+".oneOf", f.oneOf, c)
			return
		}
		p.options = l.parseEnum(path+".enum", f.enum, c)
		if f.enumNames != nil {
			l.parseEnumNames(path+".enumNames", f.enumNames, len(p.options), c)
		}
	case kindMulti:
		if f.items == nil {
			c.add(path+".items", "is required: a multi-select lists its options in items")
		} else {
			p.options = l.parseItems(path+".items", f.items, c)
		}
		p.parseItemCounts(path, f, c)
	}
}

// parseFormat sets a string property's format, one of the four MCP allows.
func (p *property) parseFormat(path string, raw json.RawMessage, c *collector) {
	if raw == nil {
		return
	}
	name, ok := decodeString(raw)
	if !ok {
		c.add(path, "must be a string, got "+blocks.KindOf(raw))
		return
	}
	if p.format, ok = formats[name]; !ok {
		c.add(path, fmt.Sprintf(`unsupported format %s: use "email", "uri", "date" or "date-time"`, quote(name)))
	}
}

// checkDefault checks a default with the same code as a submitted value: a
// default a user could not submit unchanged is a broken form.
func (p *property) checkDefault(path string, def json.RawMessage, c *collector) {
	if def == nil {
		return
	}
	v, err := decodeAny(def)
	if err != nil {
		c.add(path+".default", "is not valid JSON")
		return
	}
	p.check(v, path+".default", c)
}

// checkText enforces that a display string is a string within MaxTextLen
// characters.
func (l Limits) checkText(path string, raw json.RawMessage, c *collector) {
	if raw == nil {
		return
	}
	s, ok := decodeString(raw)
	if !ok {
		c.add(path, "must be a string, got "+blocks.KindOf(raw))
		return
	}
	if n := utf8.RuneCountInString(s); n > l.MaxTextLen {
		c.add(path, fmt.Sprintf("%d characters exceed the limit of %d", n, l.MaxTextLen))
	}
}

// parseCount parses a length or item count: a non-negative integer.
func parseCount(path string, raw json.RawMessage, c *collector) (int, bool) {
	if raw == nil {
		return 0, false
	}
	nv, ok := parseNumberText(string(bytes.TrimSpace(raw)))
	if blocks.KindOf(raw) != "number" || !ok || !nv.integral || nv.f < 0 {
		c.add(path, "must be a non-negative integer")
		return 0, false
	}
	// Counts beyond any string or selection chatd accepts behave as
	// unbounded; clamping keeps the int conversion safe.
	const maxCount = 1 << 31
	if nv.f > maxCount {
		return maxCount, true
	}
	return int(nv.f), true
}

func (p *property) parseLengths(path string, f propertyFields, c *collector) {
	minLen, hasMin := parseCount(path+".minLength", f.minLength, c)
	maxLen, hasMax := parseCount(path+".maxLength", f.maxLength, c)
	if hasMin {
		p.minLen = minLen
	}
	if hasMax {
		p.maxLen = maxLen
	}
	if hasMin && hasMax && minLen > maxLen {
		c.add(path+".minLength", fmt.Sprintf("must not exceed maxLength (%d > %d)", minLen, maxLen))
	}
}

func (p *property) parseItemCounts(path string, f propertyFields, c *collector) {
	minItems, hasMin := parseCount(path+".minItems", f.minItems, c)
	maxItems, hasMax := parseCount(path+".maxItems", f.maxItems, c)
	if hasMin {
		p.minItems = minItems
	}
	if hasMax {
		p.maxItems = maxItems
	}
	switch {
	case hasMin && hasMax && minItems > maxItems:
		c.add(path+".minItems", fmt.Sprintf("must not exceed maxItems (%d > %d)", minItems, maxItems))
	case hasMin && p.options != nil && minItems > len(p.options):
		c.add(path+".minItems", fmt.Sprintf("asks for %d selections but there are only %s",
			minItems, plural(len(p.options), "option", "options")))
	}
}

// parseBound parses minimum or maximum: any finite JSON number.
func parseBound(path string, raw json.RawMessage, c *collector) (float64, string, bool) {
	if raw == nil {
		return 0, "", false
	}
	text := string(bytes.TrimSpace(raw))
	if blocks.KindOf(raw) != "number" {
		c.add(path, "must be a number, got "+blocks.KindOf(raw))
		return 0, "", false
	}
	nv, ok := parseNumberText(text)
	if !ok {
		c.add(path, "must be a finite number within the range of a double")
		return 0, "", false
	}
	return nv.f, text, true
}

func (p *property) parseBounds(path string, f propertyFields, c *collector) {
	p.min, p.minText, p.hasMin = parseBound(path+".minimum", f.minimum, c)
	p.max, p.maxText, p.hasMax = parseBound(path+".maximum", f.maximum, c)
	if p.hasMin && p.hasMax && p.min > p.max {
		c.add(path+".minimum", fmt.Sprintf("must not exceed maximum (%s > %s)", p.minText, p.maxText))
	}
}

// rejectKeyword explains why a keyword outside the restriction is refused;
// the common offenders get a reason rather than a bare "unknown".
func rejectKeyword(key string) string {
	switch key {
	case "$ref", "$defs", "definitions":
		return key + " is not supported: the schema must be self-contained and flat"
	case "pattern":
		return "pattern is not supported: frontends do not share one regular expression dialect"
	case "properties", "patternProperties":
		return "nested objects are not supported"
	case "additionalProperties":
		return "additionalProperties is not supported: undeclared keys are always refused"
	case "anyOf", "allOf", "not", "if", "then", "else":
		return key + " is not supported: only the listed select shapes are"
	}
	return fmt.Sprintf("unknown keyword %q", key)
}
