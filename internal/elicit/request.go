package elicit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"chatd/internal/blocks"
	"github.com/google/uuid"
)

// Limits bound the size of an elicitation request. A zero or negative field
// means its DefaultLimits value, so Limits{MaxOptions: 1000} raises one bound
// and keeps the others.
type Limits struct {
	// MaxProperties caps the properties of requestedSchema.
	MaxProperties int
	// MaxOptions caps the options of one single- or multi-select.
	MaxOptions int
	// MaxTextLen caps, in characters (code points), the message and every
	// display string of the schema: titles, descriptions, option values and
	// names, property names.
	MaxTextLen int
}

// DefaultLimits are the bounds NewRequest and DecodeRequest apply: 64
// properties, 256 options per select, 4,096 characters per text.
var DefaultLimits = Limits{MaxProperties: 64, MaxOptions: 256, MaxTextLen: 4096}

func (l Limits) withDefaults() Limits {
	if l.MaxProperties <= 0 {
		l.MaxProperties = DefaultLimits.MaxProperties
	}
	if l.MaxOptions <= 0 {
		l.MaxOptions = DefaultLimits.MaxOptions
	}
	if l.MaxTextLen <= 0 {
		l.MaxTextLen = DefaultLimits.MaxTextLen
	}
	return l
}

// Request is an elicitation request, the params of an MCP
// elicitation/create request in form mode. Requests come from NewRequest or
// DecodeRequest, which check them against the restriction documented in the
// package comment; the fields are for reading.
type Request struct {
	// ID identifies the elicitation (a UUID); Meta carries it too, under
	// blocks.MetaElicitationID, which is how it travels on the wire.
	ID string
	// Message tells the user what is asked and why.
	Message string
	// RequestedSchema is the schema exactly as given, after validation.
	RequestedSchema json.RawMessage
	// Meta is the request's _meta, including the elicitation ID and any
	// widget hints under blocks.MetaWidgets. Numbers in it are json.Number.
	Meta map[string]any
	// Mode is "" for a form, ModeURL for a URL-mode question (NewURLRequest,
	// DecodeStored), which has URL and ElicitationID instead of a schema.
	Mode string
	// URL is the page a URL-mode question sends the user to.
	URL string
	// ElicitationID is the MCP server's ID of a URL-mode question, if any.
	ElicitationID string

	schema *schema // RequestedSchema parsed, for Validate
}

// NewRequest checks message, requestedSchema and meta under DefaultLimits
// and returns a request with a fresh ID. See Limits.NewRequest.
func NewRequest(message string, requestedSchema json.RawMessage, meta map[string]any) (*Request, error) {
	return DefaultLimits.NewRequest(message, requestedSchema, meta)
}

// NewRequest checks message, requestedSchema and meta under l and returns a
// request with a fresh random UUID as its ID; the error is a
// *blocks.ValidationError listing every violation. Meta is copied (through
// JSON, so it must be representable as JSON) and any elicitation ID already
// in it is replaced. Widget hints under blocks.MetaWidgets must each name a
// declared property and give a string widget.
func (l Limits) NewRequest(message string, requestedSchema json.RawMessage, meta map[string]any) (*Request, error) {
	// A random (v4) ID rather than a time-ordered one: the ID is what a
	// client needs to answer, so it should not be guessable.
	id := uuid.NewString()
	l = l.withDefaults()
	var c collector
	l.checkMessage(message, &c)
	s := parseSchema(requestedSchema, l, &c)
	m := copyMeta(meta, &c)
	if m != nil {
		m[blocks.MetaElicitationID] = id
		checkMeta(m, s, &c)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return &Request{ID: id, Message: message, RequestedSchema: bytes.Clone(requestedSchema), Meta: m, schema: s}, nil
}

// DecodeRequest decodes and checks a request received or persisted as MCP
// elicitation/create params under DefaultLimits. See Limits.DecodeRequest.
func DecodeRequest(data []byte) (*Request, error) {
	return DefaultLimits.DecodeRequest(data)
}

// DecodeRequest decodes {message, requestedSchema, _meta[, mode]} and checks
// it as NewRequest does, under l. The ID is taken from
// _meta["drupal.org/ai.elicitation_id"], which must be a UUID in canonical
// lowercase form. mode may be "form"; "url" and any other mode are refused,
// as are fields outside the form-mode params. The error is a
// *blocks.ValidationError listing every violation.
func (l Limits) DecodeRequest(data []byte) (*Request, error) {
	return l.decode(data, false)
}

// ParseParams decodes elicitation/create params as a processor receives
// them from elsewhere (an MCP server, a command), under DefaultLimits, and
// returns a request with a fresh ID. See Limits.ParseParams.
func ParseParams(data []byte) (*Request, error) {
	return DefaultLimits.ParseParams(data)
}

// ParseParams decodes {message, requestedSchema, _meta?, mode?} and checks
// it as NewRequest does, under l, minting a fresh ID as NewRequest does
// (one already in _meta is replaced). mode may be "form", which is not kept:
// chatd never emits it; "url" and any other mode are refused.
func (l Limits) ParseParams(data []byte) (*Request, error) {
	return l.decode(data, true)
}

// decode is DecodeRequest, or ParseParams when mint is set.
func (l Limits) decode(data []byte, mint bool) (*Request, error) {
	l = l.withDefaults()
	var c collector
	members, ok := readRequestObject(data, &c)
	if !ok || !checkMode(members, &c) {
		return nil, c.err()
	}
	f := l.readRequestFields(members, &c)
	s := parseSchema(f.schema, l, &c)
	if mint {
		f.mintID()
	}
	id := f.readMeta(s, &c)
	if err := c.err(); err != nil {
		return nil, err
	}
	return &Request{ID: id, Message: f.message, RequestedSchema: f.schema, Meta: f.meta, schema: s}, nil
}

// readRequestObject splits the params into their members; ok is false when
// they are not a JSON object, which leaves nothing else to check.
func readRequestObject(data []byte, c *collector) ([]member, bool) {
	if !json.Valid(data) {
		c.add("", "an elicitation request must be valid JSON")
		return nil, false
	}
	members, dups, ok := decodeObject(data)
	if !ok {
		c.add("", "an elicitation request must be a JSON object, got "+blocks.KindOf(data))
		return nil, false
	}
	for _, d := range dups {
		c.add(d, "appears more than once")
	}
	return members, true
}

// checkMode reports a mode other than "form" and returns false then. The
// mode decides which other fields belong, so a refused mode is reported
// alone rather than with complaints about its url fields.
func checkMode(members []member, c *collector) bool {
	for _, m := range members {
		if m.key != "mode" {
			continue
		}
		switch mode, ok := decodeString(m.val); {
		case !ok:
			c.add("mode", "must be a string, got "+blocks.KindOf(m.val))
		case mode == "url":
			c.add("mode", `url mode is not supported: chatd supports form mode only`)
		case mode != "form":
			c.add("mode", fmt.Sprintf("unsupported mode %s: chatd supports form mode only", quote(mode)))
		default:
			continue
		}
		return false
	}
	return true
}

// requestFields are the members of elicitation/create params, each as far
// as it could be read.
type requestFields struct {
	message string
	schema  json.RawMessage
	// meta is nil when _meta is absent or not an object; metaSeen tells the
	// two apart.
	meta     map[string]any
	metaSeen bool
}

// readRequestFields reads message, requestedSchema and _meta, reporting a
// missing message and any member that does not belong.
func (l Limits) readRequestFields(members []member, c *collector) requestFields {
	var f requestFields
	messageSeen := false
	for _, m := range members {
		switch m.key {
		case "mode":
		case "message":
			messageSeen = true
			s, ok := decodeString(m.val)
			if !ok {
				c.add("message", "must be a string, got "+blocks.KindOf(m.val))
				continue
			}
			f.message = s
			l.checkMessage(f.message, c)
		case "requestedSchema":
			f.schema = m.val
		case "_meta":
			f.metaSeen = true
			v, err := decodeAny(m.val)
			mm, ok := v.(map[string]any)
			if err != nil || !ok {
				c.add("_meta", "must be a JSON object, got "+blocks.KindOf(m.val))
				continue
			}
			f.meta = mm
		default:
			c.add(m.key, "unknown field of an elicitation request")
		}
	}
	if !messageSeen {
		c.add("message", "is required")
	}
	return f
}

// mintID puts a fresh random (v4) ID, as NewRequest mints, into _meta,
// creating _meta when the params have none.
func (f *requestFields) mintID() {
	id := uuid.NewString()
	if f.meta == nil && !f.metaSeen {
		f.metaSeen, f.meta = true, make(map[string]any, 1)
	}
	if f.meta != nil {
		f.meta[blocks.MetaElicitationID] = id
	}
}

// readMeta checks _meta, which must be present and carry the elicitation
// ID, and returns that ID; s is the parsed schema the widget hints name
// properties of, nil when it was invalid.
func (f *requestFields) readMeta(s *schema, c *collector) string {
	if !f.metaSeen {
		c.add("_meta", fmt.Sprintf("is required: it carries %q", blocks.MetaElicitationID))
		return ""
	}
	if f.meta == nil {
		return ""
	}
	idField := fmt.Sprintf("_meta[%q]", blocks.MetaElicitationID)
	v, present := f.meta[blocks.MetaElicitationID]
	id, _ := v.(string)
	switch {
	case !present:
		c.add(idField, "is required")
	case !blocks.IsCanonicalID(id):
		c.add(idField, "must be a UUID in canonical lowercase form")
	}
	checkMeta(f.meta, s, c)
	return id
}

// UnmarshalJSON decodes a request with DecodeRequest, so a Request inside a
// larger JSON document is checked like any other.
func (r *Request) UnmarshalJSON(data []byte) error {
	req, err := DecodeRequest(data)
	if err != nil {
		return err
	}
	*r = *req
	return nil
}

// wireRequest is the form-mode elicitation/create params. It has no mode:
// MCP clients treat a missing mode as form, and 2025-06-18 clients do not
// know the field.
type wireRequest struct {
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	Meta            map[string]any  `json:"_meta"`
}

// MarshalJSON encodes the request as MCP elicitation/create params:
// {message, requestedSchema, _meta}, with the ID under
// _meta["drupal.org/ai.elicitation_id"] and the schema as given.
func (r *Request) MarshalJSON() ([]byte, error) {
	meta := r.Meta
	if id, ok := meta[blocks.MetaElicitationID].(string); !ok || id != r.ID {
		meta = maps.Clone(meta)
		if meta == nil {
			meta = make(map[string]any, 1)
		}
		meta[blocks.MetaElicitationID] = r.ID
	}
	if r.IsURL() {
		return r.marshalURL(meta)
	}
	schema := r.RequestedSchema
	if len(schema) == 0 {
		schema = json.RawMessage("null")
	}
	return json.Marshal(wireRequest{Message: r.Message, RequestedSchema: schema, Meta: meta})
}

// IsConfirm reports whether the request is a trivial confirm — a schema with
// no properties, or with exactly one boolean property — which a frontend may
// render as a confirm dialog instead of a form.
func (r *Request) IsConfirm() bool {
	if r.IsURL() {
		return false
	}
	s, err := r.parsed()
	return err == nil && s.isConfirm()
}

// IsTrivialConfirm reports whether requestedSchema is valid under
// DefaultLimits and a trivial confirm (see Request.IsConfirm).
func IsTrivialConfirm(requestedSchema json.RawMessage) bool {
	var c collector
	s := parseSchema(requestedSchema, DefaultLimits, &c)
	return s != nil && s.isConfirm()
}

func (s *schema) isConfirm() bool {
	return len(s.props) == 0 || (len(s.props) == 1 && s.props[0].kind == kindBoolean)
}

// parsed returns the parsed schema, parsing it when the request was built
// as a struct literal rather than by NewRequest or DecodeRequest.
func (r *Request) parsed() (*schema, error) {
	if r.schema != nil {
		return r.schema, nil
	}
	var c collector
	s := parseSchema(r.RequestedSchema, DefaultLimits, &c)
	if s == nil {
		return nil, c.err()
	}
	return s, nil
}

func (l Limits) checkMessage(message string, c *collector) {
	if strings.TrimSpace(message) == "" {
		// The message is the question itself; block-unaware clients show
		// nothing else.
		c.add("message", "is required: it tells the user what is asked")
		return
	}
	if n := utf8.RuneCountInString(message); n > l.MaxTextLen {
		c.add("message", fmt.Sprintf("%d characters exceed the limit of %d", n, l.MaxTextLen))
	}
}

// copyMeta deep-copies meta through JSON, so the request owns its _meta,
// holds only JSON values (numbers as json.Number, as after decoding) and is
// known to be encodable.
func copyMeta(meta map[string]any, c *collector) map[string]any {
	if len(meta) == 0 {
		return make(map[string]any, 1)
	}
	data, err := json.Marshal(meta)
	if err != nil {
		c.add("_meta", "must be representable as JSON: "+err.Error())
		return nil
	}
	v, err := decodeAny(data)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		c.add("_meta", "must be a JSON object")
		return nil
	}
	return m
}

// checkMeta checks the _meta key grammar and the widget hints; s is nil when
// the schema was invalid, and then hints are not matched to properties.
func checkMeta(meta map[string]any, s *schema, c *collector) {
	c.merge(blocks.ValidateMeta(meta, "_meta"))
	raw, ok := meta[blocks.MetaWidgets]
	if !ok {
		return
	}
	path := fmt.Sprintf("_meta[%q]", blocks.MetaWidgets)
	hints, ok := raw.(map[string]any)
	if !ok {
		c.add(path, "must be an object keyed by property name, got "+blocks.KindOf(raw))
		return
	}
	names := make([]string, 0, len(hints))
	for name := range hints {
		names = append(names, name)
	}
	slices.Sort(names) // map order is random; errors should not be
	for _, name := range names {
		hp := path + "." + name
		if s != nil {
			if _, declared := s.index[name]; !declared {
				c.add(hp, fmt.Sprintf("%s is not a declared property", quote(name)))
				continue
			}
		}
		hint, ok := hints[name].(map[string]any)
		if !ok {
			c.add(hp, "must be an object with a widget name, got "+blocks.KindOf(hints[name]))
			continue
		}
		if w, ok := hint["widget"].(string); !ok || w == "" {
			c.add(hp+".widget", "is required: a non-empty string naming the widget")
		}
	}
}
