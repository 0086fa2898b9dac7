// Package elicit implements chatd's MCP elicitations: the Request a
// processor emits when it pauses to ask the user a structured question, the
// restriction its requestedSchema must meet, and the validation of the
// Result the frontend posts back.
//
// # Wire shape
//
// A Request encodes exactly as the params of an MCP elicitation/create
// request in form mode — {message, requestedSchema, _meta} — with its ID, a
// UUID, under _meta["drupal.org/ai.elicitation_id"]. chatd never emits mode
// (MCP clients treat a missing mode as form, and 2025-06-18 clients do not
// know it); DecodeRequest accepts mode "form" and refuses "url" and any other
// mode. The schema is kept byte for byte as the processor wrote it: nothing
// is added, so a request that uses only 2025-06-18 features contains no
// 2025-11-25 keyword. A Result is an MCP ElicitResult: {action, content?}.
//
// # The flat restriction
//
// requestedSchema is the restricted JSON Schema subset that MCP 2025-06-18
// and 2025-11-25 define for form mode, and nothing more:
//
//	{"$schema"?: string, "type": "object", "properties": {...}, "required"?: [names]}
//
// Each property has optional title, description and default, and is one of
//
//   - string: minLength, maxLength (0 ≤ min ≤ max), format ∈ {email, uri, date, date-time}
//   - number or integer: minimum, maximum (min ≤ max)
//   - boolean
//   - single-select: type "string" with enum (non-empty, unique strings) and the
//     legacy enumNames (one per value), or with oneOf [{const, title}]
//   - multi-select: type "array" with items {type: "string", enum} or
//     items {anyOf: [{const, title}]}, and minItems, maxItems
//
// A default must be a value the user could submit unchanged: right type,
// within its length, range, format or options. Everything else is refused
// when the request is built, with a violation naming the property and the
// rule: nested objects, arrays of anything but option strings, $ref,
// pattern, composition keywords and any unknown keyword, required names that
// are not declared or repeat, and duplicate keys anywhere (the JSON would
// mean different things to different parsers). Limits bounds the size:
// properties, options per select, and characters per message, title,
// description, option and property name.
//
// The restriction is what keeps elicitation portable. Every field maps to
// one of a handful of widgets — text input, number input, checkbox, select,
// multi-select, date picker — that any frontend, in any toolkit, can render
// without a JSON Schema engine, and it is the subset MCP clients already
// agree on, so the same request can be relayed to or from any MCP peer.
// Widget hints (_meta["drupal.org/ai.widgets"], keyed by property name, each
// {"widget": name, ...}) let a richer frontend upgrade a field — an entity
// autocomplete instead of a text box — while the schema, and therefore
// every other client's rendering and chatd's validation, stays unchanged. A
// hint must name a declared property.
//
// The documented limits follow from that: no nesting, no file uploads (a
// form carries only strings, numbers, booleans and option lists), no custom
// regular expressions, and form mode only for processors. URL mode, which
// sends the user off to another site, is asked only on behalf of an MCP
// server (NewURLRequest, read back from storage by DecodeStored): the URL
// must pass CheckURL, and the answer carries no content.
//
// # Result validation
//
// Request.Validate checks an accept result's content against the schema:
// required properties present, no undeclared keys, the right JSON type,
// string lengths counted in Unicode code points, formats, numbers within
// range, options that are members, and multi-selections that are unique and
// within their item counts. decline and cancel must carry no content ({}
// counts as none). Defaults are never filled in. Every violation is reported
// at once, each with the property name as its field.
//
// The formats accept ASCII text only, as JSON Schema's do (the idn- and iri
// variants are not formats MCP allows):
//
//   - email: a bare address local@domain — no display name, comment, angle
//     brackets or spaces. The local part is an RFC 5322 dot-atom (letters,
//     digits and !#$%&'*+-/=?^_`{|}~, dots only between them; no quoted
//     form), at most 64 characters. The domain is a host name of
//     letter-digit-hyphen labels, 1 to 63 characters each, no hyphen at either
//     end, or an IP address in brackets ([192.0.2.1], [2001:db8::1]). The
//     address is at most 254 characters (RFC 5321).
//   - uri: an RFC 3986 URI with a scheme — scheme ":" hier-part ["?" query]
//     ["#" fragment] — made of unreserved and reserved characters and %XX
//     escapes; an authority must be [userinfo "@"] host [":" port], its host
//     a registered name or a bracketed IPv6 address. "[" and "]" are also
//     tolerated in the path, query and fragment, where browsers leave them.
//   - date: a real calendar day written YYYY-MM-DD, years 0000 to 9999
//     (2024-02-29 passes, 2025-02-29 does not).
//   - date-time: RFC 3339 with a time zone offset, as time.Parse reads it.
//
// Numbers are compared with their bounds as IEEE 754 doubles, as JavaScript
// frontends compare them; a number beyond the range of a double is refused.
// Whether a number is an integer is decided exactly, on its decimal digits:
// 1.0, 1e2 and 1.50e1 are integers (JSON Schema counts any number with a
// zero fractional part), 1.5 is not, and neither is 1.0000000000000000001,
// although it rounds to one.
package elicit
