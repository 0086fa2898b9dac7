// Package blocks holds chatd's message model: MCP content blocks, the chat
// Message that carries them, and the rules for _meta keys. It is pure: no
// I/O, no dependency on the store or the API.
//
// # One wrapper, canonical MCP shape
//
// ContentBlock is a single type for all five MCP block types (text, image,
// audio, resource_link, resource), not a type per kind. It holds the block as
// the JSON object MCP defines (2025-06-18 and 2025-11-25), so what chatd
// stores and serves is exactly what MCP clients and servers exchange.
// Decoding validates (UnmarshalJSON, Decode, DecodeList) and so does every
// constructor (Text, Image, Audio, ResourceLink, EmbeddedResource,
// EntityCard), so a ContentBlock that exists is a valid one.
//
// Decoding then encoding gives back the same JSON object, key order aside:
// required keys stay even when empty ("text": ""), priority 0 stays, numbers
// keep the digits they were written with, and fields chatd does not know are
// preserved wherever they appear — on the block, inside annotations, inside
// resource, inside each icon. Known fields are validated where MCP puts them;
// a field that belongs to another block type (data on a text block) is just
// an unknown field. Annotations belong to the block: an "annotations" member
// inside resource is not MCP's, so it is kept as an unknown field and not
// interpreted. Duplicate keys resolve as encoding/json does (the last wins)
// and only the winner is written back. Output keys are sorted, "type" first.
//
// What is checked: the type is one of the five; required fields are present
// with the right JSON type; data and blob are standard base64 with padding
// (no line breaks); annotations.audience only holds "user" and "assistant",
// annotations.priority is a number in [0,1], annotations.lastModified is an
// RFC 3339 date-time with offset; resource_link size is a number >= 0 (MCP's
// schema.ts says number, so 1.5 passes) and icons are objects with a string
// src, optional mimeType, sizes (strings) and theme ("light" or "dark");
// resource has a string uri and exactly one of text (string) and blob
// (base64); every _meta object (on the block and inside resource) has valid
// keys. Optional fields must have their type when present: null is not a
// string. Errors are *ValidationError values listing every violation with the
// path of its field (content_blocks[1].annotations.priority), ready to return
// to a client as they are.
//
// # Text is authoritative
//
// A Message's text is what a block-unaware consumer shows, and it must make
// sense on its own: blocks and _meta enrich a message, they never carry
// meaning the text lacks (an entity card is also a plain link, a form is also
// a question in prose). A message may still have blocks and empty text. A
// Message without blocks and _meta serializes exactly as
// {id, role, message, timestamp}.
//
// # _meta keys
//
// Keys follow the MCP grammar: an optional prefix of dot-separated labels,
// each starting with a letter and ending with a letter or digit with letters,
// digits and hyphens inside, ended by one "/"; then a name that begins and
// ends with a letter or digit and may hold "-", "_", "." and alphanumerics
// inside. drupal.org/ai.citations is valid, drupal.org/ai/citations is not.
// MCP lets the name be empty; chatd does not, so "" and "drupal.org/" are
// invalid — a key must name something. Values are free-form JSON.
//
// Prefixes whose second label is modelcontextprotocol or mcp
// (io.modelcontextprotocol/, dev.mcp/) are reserved for MCP, as are the
// forward-order forms of MCP 2025-06-18 (mcp.dev/). Such keys are valid when
// received — MCP's own keys pass through chatd — but chatd never mints them:
// ValidateMetaKey checks received keys, ValidateMintedMetaKey keys chatd
// writes, and WithMeta uses the latter.
//
// chatd's own keys are the Meta* constants (RegisteredKeys), all under
// drupal.org/ai.; docs/meta-keys.md gives each value's shape. Third parties
// use <their-domain>/<module>.<name>.
package blocks
