// Package remote is the processor that answers turns from another process
// over HTTP, so a processor can be written in any language: for each turn
// chatd POSTs the thread, the turn, the principal, the user's message, the
// history window and, on a resume, the state the processor paused with; the
// processor answers with its reply as one JSON document or streams it as
// NDJSON, text deltas first and the reply last. docs/remote-processors.md
// is the protocol, docs/remote-processor.schema.json its JSON Schema.
//
// The answer is held to what chatd asks of every processor: content blocks
// decode and validate (internal/blocks), _meta keys follow the grammar and
// leave chatd's record keys alone, and a pause's elicitation passes the
// requestedSchema restriction (internal/elicit). Anything else — an invalid
// answer, a non-2xx status, a broken stream, the request's timeout — fails
// the turn with a *processor.Error whose Detail tells the client what the
// remote processor did without naming where it runs. A request is never
// retried: a turn may have had side effects by the time it failed.
package remote
