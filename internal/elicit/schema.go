package elicit

// requestedSchema: the shapes the restriction allows and the parse of the
// root object.
// property.go parses one property, options.go the options of selects, and
// collector.go gathers what is wrong.

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	title    string // "" when the schema gives none
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

const schemaRoot = "requestedSchema"

// parseSchema checks raw against the restriction (see the package comment)
// under the limits l and returns it parsed, or nil after recording every
// violation in c.
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
		c.add(schemaRoot, "must be a JSON object, got "+blocks.KindOf(raw))
		return nil
	}
	for _, d := range dups {
		c.add(schemaRoot+"."+d, "keyword appears more than once")
	}
	s := &schema{}
	props, required := readSchemaRoot(members, c)
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

// readSchemaRoot checks the root object's own keywords and returns its
// properties and required, nil when absent.
func readSchemaRoot(members []member, c *collector) (props, required json.RawMessage) {
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
			if _, known := keywords[m.key]; known {
				c.add(path, fmt.Sprintf("keyword %q is not allowed at the root", m.key))
			} else {
				c.add(path, rejectKeyword(m.key))
			}
		}
	}
	if !sawType {
		c.add(schemaRoot+".type", `is required and must be "object"`)
	}
	return props, required
}

func (s *schema) parseProperties(raw json.RawMessage, l Limits, c *collector) {
	const path = schemaRoot + ".properties"
	members, dups, ok := decodeObject(raw)
	if !ok {
		c.add(path, "must be a JSON object keyed by property name, got "+blocks.KindOf(raw))
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
		c.add(path, "must be an array of property names, got "+blocks.KindOf(raw))
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
			c.add(ep, "must be a string, got "+blocks.KindOf(e))
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
