// Package mcptools connects the agent processor to MCP tool servers: each
// server of the agents file's mcp_servers is an agent.ToolSource whose tools
// call the server through github.com/modelcontextprotocol/go-sdk, over stdio
// or streamable HTTP.
//
// # Tools
//
// A server's tools reach the model as <server>__<tool>, filtered by the
// server's allow globs; the list is fetched when first needed and again
// after the server announces notifications/tools/list_changed. A tool whose
// annotations say destructiveHint: true, and not readOnlyHint: true, is
// marked Destructive, so the agent asks the user before running it (unless
// no_confirm matches it).
//
// A result's content blocks are taken from the raw JSON the server sent (see
// capture.go) and decoded with internal/blocks, so they reach the reply
// exactly, annotations and _meta included.
//
// # Progress
//
// Every call carries a progress token chatd mints. The server's
// notifications/progress for it are read from the wire (so their numbers
// stay as the server wrote them) and reach agent.ToolCall.Report while the
// call runs; one for any other token is ignored.
//
// # Tasks
//
// A tool whose execution.taskSupport is "required" runs as an MCP task
// (task.go): chatd sends tools/call with a task, tasks/get, tasks/result
// and tasks/cancel itself, as go-sdk has none of them, and reports each
// status change as the call's. One flow serves both transports; only the
// sending differs (taskSender): the session's connection over stdio, POSTs
// of chatd's own on the session over streamable HTTP (httptask.go).
//
// # Questions from the server
//
// A server may ask the user a question (an elicitation) while a tool runs:
// a form, or (2025-11-25 and later) a URL-mode question that sends the user
// to a page. chatd checks it with internal/elicit; an invalid form, or a
// URL chatd does not show (elicit.CheckURL), is declined back to the
// server without bothering the user. A call the server refuses with error
// -32042 (visit these pages first) pauses on each page in turn and is
// retried with the same arguments once the user has accepted them all. A
// notifications/elicitation/complete for a held URL-mode question answers
// the server accept at once and, through OnSettled, the paused turn's
// question accept for the user, so the turn resumes by itself.
// A valid one pauses the turn with it, in one of two ways depending on the
// protocol generation the server speaks:
//
//   - 2026-07-28 (multi round-trip requests): the call ends with an
//     InputRequiredResult. The tool's pause state holds the input request
//     IDs and the server's requestState; the resume, on any instance, retries
//     the call with inputResponses.
//   - 2025-06-18 and 2025-11-25: the server sends elicitation/create inside
//     the call, which must stay open on the instance that made it. That
//     instance holds the call (and its MCP session) and the pause state names
//     the instance and the hold. The instance that receives the answer
//     publishes it on the holder's channel of a Relay (Redis pub/sub when
//     chatd shares a Redis, in-process otherwise); the holder answers the
//     server and publishes the outcome back: the result, or the server's
//     next question. A holder that is gone, or a hold that expired (the
//     holder then answered the server cancel), is reported to the model as
//     a tool that did not complete.
//
// Each call has an MCP session to itself, taken from a small pool per
// server, so a question the server sends is known to belong to that call.
package mcptools
