// Package aisdk speaks the Vercel AI SDK's UI message stream protocol (the
// `ai` package, version 7): it reads the body DefaultChatTransport posts into
// a chatd turn request, and writes a turn's events as the stream useChat and
// readUIMessageStream consume.
//
// A turn's stream, one JSON part per SSE data line:
//
//	start {messageId}                      the assistant message's ID (for an
//	                                       answer: the paused UI message's)
//	start-step
//	text-start / text-delta… / text-end    the reply text
//	data-content-block {data}              one per MCP content block
//	message-metadata {chatd: {thread_id, turn_id, message_id, user_message_id, _meta}}
//	tool-input-start, tool-input-available a pause: the client-side tool
//	                                       "elicitation", toolCallId = the
//	                                       elicitation ID, input = its params
//	finish-step, finish {finishReason}
//	[DONE]
//
// or, when the turn fails, an error part {errorText} and [DONE].
package aisdk
