// Package agent is the processor that puts a real model behind chatd: an
// OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM, LM
// Studio, llama.cpp's server), streamed, with tools.
//
// # A turn
//
// The history window becomes the model's messages — text authoritative,
// content blocks summarized as text ("[link: name <uri>]", "[image: mime]"),
// elicitation questions and answers as the text history keeps of them —
// after the system prompt. The agent then loops: it calls the model,
// streaming its text to the client as text.delta events, and runs the tool
// calls of its reply in order, giving the results back to the model, until
// the model answers without calling a tool. A turn makes at most MaxSteps
// model calls; tool calls in the reply of the last allowed call are not run
// (nothing could read their results) and are recorded as skipped.
//
// Each tool run is recorded in the reply's _meta["drupal.org/ai.tool_call"]
// ([{id, name, arguments, status, error?}]), and while a tool runs a delta
// carries _meta["drupal.org/ai.status_item"] ({id: the call's ID, label,
// state}). A tool's content blocks are appended to the reply's blocks and
// its structured content goes to _meta["drupal.org/ai.structured_content"].
//
// # Pausing
//
// Three things pause a turn with an elicitation:
//
//   - ask_user, the built-in tool: the model asks the user a form
//     ({message, requestedSchema}). An invalid request is not sent to the
//     user; the model gets chatd's field errors as the tool's error and can
//     correct itself.
//   - a tool that needs confirmation: matched by a Confirm glob, or marked
//     Destructive, and not matched by a NoConfirm glob. The user gets a
//     confirm (an empty form): accept runs the tool, decline tells the model
//     the user declined, cancel ends the turn (completed) without another
//     model call.
//   - a tool that asks the user itself (ToolResult.Pause), as an MCP tool
//     raising an elicitation does.
//
// The pause state (see pauseState) holds the exchange since the user's
// message and the pending call, so the answer can be handled on any instance
// by a fresh processor.
//
// # Errors
//
// Model requests are retried twice on 429, 5xx and connection errors, with
// the client library's backoff (honouring Retry-After). A model that still
// fails, a malformed or cut-off stream, fails the turn with a
// *processor.Error whose detail names what the model did ("the model
// answered 429 Too Many Requests (3 attempts)"), which chatd answers with
// 502 processor_failed. The turn timeout cancels the model request.
package agent
