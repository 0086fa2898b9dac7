// Package agui speaks AG-UI (protocol 1.0, the @ag-ui/client HttpAgent): it
// reads a RunAgentInput into a chatd turn request, and writes a turn's
// events as the AG-UI events of one run.
//
// A run, one JSON event per SSE data line:
//
//	RUN_STARTED {threadId, runId}
//	TEXT_MESSAGE_START / CONTENT… / END    messageId = the assistant message's ID
//	CUSTOM chatd.content_blocks {message_id, content_blocks, _meta}
//	RUN_FINISHED {outcome: {type: "success"}}
//	  or {outcome: {type: "interrupt", interrupts: [{id, reason, message,
//	      responseSchema, expiresAt, metadata: {_meta}}]}}   a pause
//	  or RUN_ERROR {message, code}                          a failure
//
// A run whose input carries resume [{interruptId, status, payload}] answers
// the pending elicitation instead of posting a message.
package agui
