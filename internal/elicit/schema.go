package elicit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"chatd/internal/blocks"
)

// propKind is the shape of one form field.
type propKind uint8

const (
	kindString propKind = iota + 1
	kindNumber
	kindInteger
	kindBoolean
	kindSelect // type string with enum or oneOf
	kindMulti  // type array of enum strings
)

func (k propKind) article() string {
	switch k {
	case kindString:
		return "a string"
	case kindNumber:
		return "a number"
	case kindInteger:
		return "an integer"
	case kindBoolean:
		return "a boolean"
	case kindSelect:
		return "a single-select"
	default:
		return "a multi-select"
	}
}

// stringFormat is one of the four formats MCP allows on a string property.
type stringFormat uint8

const (
	formatNone stringFormat = iota
	formatEmail
	formatURI
	formatDate
	formatDateTime
)

var formats = map[string]stringFormat{
	"email":     formatEmail,
	"uri":       formatURI,
	"date":      formatDate,
	"date-time": formatDateTime,
}

// maxListedOptions is how many options a "must be one of" detail spells out;
// beyond it the detail only gives their number, to keep errors readable.
const maxListedOptions = 10

// optionSetThreshold is the option count above which membership is checked
// with a map rather than a linear scan.
const optionSetThreshold = 12

// property is one requestedSchema property, reduced at construction to what
// Validate needs, so validating a result never touches JSON again.
type property struct {
	name     string
	kind     propKind
	required bool

	minLen, maxLen int // maxLen < 0: no upper bound
	format         stringFormat

	min, max         float64
	hasMin, hasMax   bool
	minText, maxText string // the bounds as written, for error details

	options     []string
	optionSet   map[string]struct{} // nil for short option lists
	optionsText string              // the "must be one of …" detail

	minItems, maxItems int // maxItems < 0: no upper bound
}

// schema is a requestedSchema that passed the restriction, parsed.
type schema struct {
	props []property // in document order
	index map[string]int
	// declared holds every property name, valid or not, while parsing, so
	// that required does not add "not declared" to a property's own errors;
	// nil when properties could not be read at all.
	declared map[string]bool
}

// collector gathers violations, allocating only when there is one, so that
// validating a good result costs no allocation for errors.
type collector struct {
	ve *blocks.ValidationError
}

func (c *collector) add(field, detail string) {
	if c.ve == nil {
		c.ve = &blocks.ValidationError{}
	}
	c.ve.Add(field, detail)
}

func (c *collector) merge(err error) {
	if err == nil {
		return
	}
	if c.ve == nil {
		c.ve = &blocks.ValidationError{}
	}
	c.ve.Merge(err)
}

func (c *collector) len() int {
	if c.ve == nil {
		return 0
	}
	return len(c.ve.Errors)
}

// err returns the violations as a *blocks.ValidationError, or a nil error.
func (c *collector) err() error {
	if c.ve == nil {
		return nil
	}
	return c.ve
}

// keywords are the JSON Schema keywords a property may use in some variant;
// any other keyword is unknown.
var keywords = map[string]bool{
	"type": true, "title": true, "description": true, "default": true,
	"minLength": true, "maxLength": true, "format": true,
	"minimum": true, "maximum": true,
	"enum": true, "enumNames": true, "oneOf": true,
	"items": true, "minItems": true, "maxItems": true,
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

// quote quotes a schema- or user-supplied string for an error detail,
// shortened so that a detail stays a readable line.
func quote(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	r := []rune(s)
	return fmt.Sprintf("%q…", string(r[:max]))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

const schemaRoot = "requestedSchema"

// parseSchema checks raw against the restriction of SPEC §4 under the limits
// l and returns it parsed, or nil after recording every violation in c.
func parseSchema(raw json.RawMessage, l Limits, c *collector) *schema {
	before := c.len()
	if len(bytes.TrimSpace(raw)) == 0 {
		c.add(schemaRoot, "is required")
		return nil
	}
	if !json.Valid(raw) {
		c.add(schemaRoot, "is not valid JSON")
		return nil
	}
	members, dups, ok := decodeObject(raw)
	if !ok {
		c.add(schemaRoot, "must be a JSON object, got "+jsonKind(raw))
		return nil
	}
	for _, d := range dups {
		c.add(schemaRoot+"."+d, "keyword appears more than once")
	}
	s := &schema{}
	var props, required json.RawMessage
	sawType := false
	for _, m := range members {
		path := schemaRoot + "." + m.key
		switch m.key {
		case "type":
			sawType = true
			if t, ok := decodeString(m.val); !ok || t != "object" {
				c.add(path, `must be "object"`)
			}
		case "properties":
			props = m.val
		case "required":
			required = m.val
		case "$schema":
			if _, ok := decodeString(m.val); !ok {
				c.add(path, "must be a string")
			}
		default:
			if keywords[m.key] {
				c.add(path, fmt.Sprintf("keyword %q is not allowed at the root", m.key))
			} else {
				c.add(path, rejectKeyword(m.key))
			}
		}
	}
	if !sawType {
		c.add(schemaRoot+".type", `is required and must be "object"`)
	}
	if props == nil {
		c.add(schemaRoot+".properties", "is required")
	} else {
		s.parseProperties(props, l, c)
	}
	if required != nil {
		s.parseRequired(required, l, c)
	}
	if c.len() > before {
		return nil
	}
	s.declared = nil // only needed while parsing
	return s
}

func (s *schema) parseProperties(raw json.RawMessage, l Limits, c *collector) {
	const path = schemaRoot + ".properties"
	members, dups, ok := decodeObject(raw)
	if !ok {
		c.add(path, "must be a JSON object keyed by property name, got "+jsonKind(raw))
		return
	}
	for _, d := range dups {
		c.add(path+"."+d, "property is declared more than once")
	}
	if len(members) > l.MaxProperties {
		// Stop here: parsing thousands of properties only to refuse them
		// would let an oversized schema cost what the limit is meant to cap.
		c.add(path, fmt.Sprintf("%d properties exceed the limit of %d", len(members), l.MaxProperties))
		return
	}
	s.props = make([]property, 0, len(members))
	s.index = make(map[string]int, len(members))
	s.declared = make(map[string]bool, len(members))
	for _, m := range members {
		s.declared[m.key] = true
		if m.key == "" {
			// A nameless field cannot be reported: its violations would have
			// an empty field.
			c.add(path, "property names must not be empty")
			continue
		}
		if n := utf8.RuneCountInString(m.key); n > l.MaxTextLen {
			c.add(path, fmt.Sprintf("a property name of %d characters exceeds the limit of %d", n, l.MaxTextLen))
			continue
		}
		p, ok := parseProperty(m.key, m.val, l, c)
		if !ok {
			continue
		}
		s.index[p.name] = len(s.props)
		s.props = append(s.props, p)
	}
}

func (s *schema) parseRequired(raw json.RawMessage, l Limits, c *collector) {
	const path = schemaRoot + ".required"
	elems, ok := decodeArray(raw)
	if !ok {
		c.add(path, "must be an array of property names, got "+jsonKind(raw))
		return
	}
	if len(elems) > l.MaxProperties {
		// Unique declared names cannot outnumber the properties; one
		// violation instead of one per surplus name.
		c.add(path, fmt.Sprintf("%d names exceed the limit of %d properties", len(elems), l.MaxProperties))
		return
	}
	seen := make(map[string]bool, len(elems))
	for i, e := range elems {
		ep := fmt.Sprintf("%s[%d]", path, i)
		name, ok := decodeString(e)
		switch {
		case !ok:
			c.add(ep, "must be a string, got "+jsonKind(e))
		case seen[name]:
			c.add(ep, fmt.Sprintf("%s is listed more than once", quote(name)))
		default:
			seen[name] = true
			if s.declared == nil {
				continue // properties itself is broken and already reported
			}
			if !s.declared[name] {
				c.add(ep, fmt.Sprintf("%s is not a declared property", quote(name)))
				continue
			}
			if j, ok := s.index[name]; ok {
				s.props[j].required = true
			}
		}
	}
}

// propertyFields holds a property's keywords as raw JSON, nil when absent.
type propertyFields struct {
	typ, title, description, def json.RawMessage
	minLength, maxLength, format json.RawMessage
	minimum, maximum             json.RawMessage
	enum, enumNames, oneOf       json.RawMessage
	items, minItems, maxItems    json.RawMessage
	present                      []string
}

// allowedIn reports whether a known keyword belongs to the variant of kind
// (and, for single-selects, of enum versus oneOf).
func allowedIn(key string, kind propKind, viaOneOf bool) bool {
	switch key {
	case "type", "title", "description", "default":
		return true
	case "minLength", "maxLength", "format":
		return kind == kindString
	case "minimum", "maximum":
		return kind == kindNumber || kind == kindInteger
	case "enum", "enumNames":
		return kind == kindSelect && !viaOneOf
	case "oneOf":
		return kind == kindSelect && viaOneOf
	case "items", "minItems", "maxItems":
		return kind == kindMulti
	}
	return false
}

// parseProperty checks one property and returns it parsed; ok is false when
// it violated the restriction (the violations are in c).
func parseProperty(name string, raw json.RawMessage, l Limits, c *collector) (property, bool) {
	path := schemaRoot + ".properties." + name
	before := c.len()
	members, dups, ok := decodeObject(raw)
	if !ok {
		c.add(path, "must be a JSON object, got "+jsonKind(raw))
		return property{}, false
	}
	for _, d := range dups {
		c.add(path+"."+d, "keyword appears more than once")
	}
	var f propertyFields
	for _, m := range members {
		switch m.key {
		case "type":
			f.typ = m.val
		case "title":
			f.title = m.val
		case "description":
			f.description = m.val
		case "default":
			f.def = m.val
		case "minLength":
			f.minLength = m.val
		case "maxLength":
			f.maxLength = m.val
		case "format":
			f.format = m.val
		case "minimum":
			f.minimum = m.val
		case "maximum":
			f.maximum = m.val
		case "enum":
			f.enum = m.val
		case "enumNames":
			f.enumNames = m.val
		case "oneOf":
			f.oneOf = m.val
		case "items":
			f.items = m.val
		case "minItems":
			f.minItems = m.val
		case "maxItems":
			f.maxItems = m.val
		default:
			c.add(path+"."+m.key, rejectKeyword(m.key))
			continue
		}
		f.present = append(f.present, m.key)
	}

	p := property{name: name, maxLen: -1, maxItems: -1}
	if f.typ == nil {
		c.add(path+".type", "is required")
		return property{}, false
	}
	t, ok := decodeString(f.typ)
	if !ok {
		c.add(path+".type", "must be a single type name, got "+jsonKind(f.typ))
		return property{}, false
	}
	viaOneOf := false
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
		return property{}, false
	default:
		c.add(path+".type", fmt.Sprintf("unsupported type %s", quote(t)))
		return property{}, false
	}
	for _, key := range f.present {
		if allowedIn(key, p.kind, viaOneOf) {
			continue
		}
		if key == "oneOf" && f.enum != nil {
			c.add(path+".oneOf", "cannot be combined with enum: a single-select uses one or the other")
			continue
		}
		c.add(path+"."+key, fmt.Sprintf("keyword %q is not allowed on %s property", key, p.kind.article()))
	}
	l.checkText(path+".title", f.title, c)
	l.checkText(path+".description", f.description, c)

	switch p.kind {
	case kindString:
		p.parseLengths(path, f, c)
		if f.format != nil {
			name, ok := decodeString(f.format)
			if !ok {
				c.add(path+".format", "must be a string, got "+jsonKind(f.format))
			} else if p.format, ok = formats[name]; !ok {
				c.add(path+".format", fmt.Sprintf(`unsupported format %s: use "email", "uri", "date" or "date-time"`, quote(name)))
			}
		}
	case kindNumber, kindInteger:
		p.parseBounds(path, f, c)
	case kindSelect:
		if viaOneOf {
			p.options = l.parseOptions(path+".oneOf", f.oneOf, c)
		} else {
			p.options = l.parseEnum(path+".enum", f.enum, c)
			if f.enumNames != nil {
				l.parseEnumNames(path+".enumNames", f.enumNames, len(p.options), c)
			}
		}
	case kindMulti:
		if f.items == nil {
			c.add(path+".items", "is required: a multi-select lists its options in items")
		} else {
			p.options = l.parseItems(path+".items", f.items, c)
		}
		p.parseItemCounts(path, f, c)
	}
	if c.len() > before {
		return property{}, false
	}
	p.indexOptions()
	if f.def != nil {
		// The default is checked by the same code as a submitted value: a
		// default a user could not submit unchanged is a broken form.
		v, err := decodeAny(f.def)
		if err != nil {
			c.add(path+".default", "is not valid JSON")
		} else {
			p.check(v, path+".default", c)
		}
	}
	return p, c.len() == before
}

// checkText enforces that a display string is a string within MaxTextLen
// characters.
func (l Limits) checkText(path string, raw json.RawMessage, c *collector) {
	if raw == nil {
		return
	}
	s, ok := decodeString(raw)
	if !ok {
		c.add(path, "must be a string, got "+jsonKind(raw))
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
	if jsonKind(raw) != "number" || !ok || !nv.integral || nv.f < 0 {
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
	if jsonKind(raw) != "number" {
		c.add(path, "must be a number, got "+jsonKind(raw))
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

// optionList checks the array holding a select's options and returns its
// elements.
func (l Limits) optionList(path string, raw json.RawMessage, c *collector) ([]json.RawMessage, bool) {
	elems, ok := decodeArray(raw)
	switch {
	case !ok:
		c.add(path, "must be an array, got "+jsonKind(raw))
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
			c.add(ep, "enum values must be strings, got "+jsonKind(e))
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
		c.add(path, "must be an array of strings, got "+jsonKind(raw))
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
			c.add(ep, "must be an object {const, title}, got "+jsonKind(e))
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
			c.add(ep+".const", "option values must be strings, got "+jsonKind(cnst))
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
		c.add(path, "must be an object with enum or anyOf options, got "+jsonKind(raw))
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
			c.add(path+".type", "must be a single type name, got "+jsonKind(typ))
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
