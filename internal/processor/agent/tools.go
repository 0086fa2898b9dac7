package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"chatd/internal/blocks"
	"chatd/internal/elicit"
)

// Tool is a function the model may call. Tools are registered in code
// (Config.Tools); an MCP server is a ToolSource whose tools call the server.
//
// A tool's result has the shape of an MCP CallToolResult — content blocks,
// structured content and an error flag — so a tool backed by an MCP server
// passes its result through unchanged. A tool that needs the user's answer
// before it can finish (an MCP server's elicitation) returns a Pause; the
// agent pauses the turn with its request and calls the tool again, on
// whichever instance receives the answer, with the answer and the tool's
// saved state in ToolCall.Resume.
type Tool interface {
	// Definition describes the tool to the model.
	Definition() ToolDefinition
	// Call runs the tool. An error fails the call: the model is told the
	// tool failed (with the error's text) and may try something else; the
	// turn goes on. A result with IsError set is the tool's own report of a
	// failure, given to the model the same way.
	Call(ctx context.Context, call ToolCall) (ToolResult, error)
}

// ToolSource provides tools. The agent asks for the list at the start of
// every turn, so a source whose tools change (an MCP server announcing
// list_changed) is seen by the next turn.
type ToolSource interface {
	// Tools returns the source's current tools. An error fails the turn.
	Tools(ctx context.Context) ([]Tool, error)
}

// Tools is a fixed list of tools, the ToolSource of tools written in Go.
type Tools []Tool

// Tools implements ToolSource.
func (t Tools) Tools(context.Context) ([]Tool, error) { return t, nil }

// ToolDefinition is what the model sees of a tool.
type ToolDefinition struct {
	// Name is the function name the model calls: 1 to 64 letters, digits,
	// underscores and hyphens (MCP tools are named <server>__<tool>). The
	// confirm and no_confirm globs match it.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Parameters is the JSON Schema of the arguments object; nil means a
	// tool without arguments.
	Parameters json.RawMessage
	// Destructive marks a tool that changes or deletes things (MCP's
	// destructiveHint): it needs the user's confirmation unless its name
	// matches a no_confirm glob.
	Destructive bool
}

// ToolCall is one call of a tool by the model.
type ToolCall struct {
	// ID is the model's ID of the call.
	ID string
	// Name is the tool's name as the model called it.
	Name string
	// Arguments is the arguments object the model sent, as JSON.
	Arguments json.RawMessage
	// Resume is set when the call continues after the user answered the
	// elicitation this tool paused with.
	Resume *ToolResume
	// ThreadID and Principal are the turn's: a tool may bound what one
	// principal holds of it (the MCP sessions its questions keep open), and
	// a tool that learns later, on its own, that the question it paused
	// with is settled (an MCP server's notifications/elicitation/complete)
	// answers it on the thread.
	ThreadID, Principal string
	// Report, when set, streams the call's progress to the user while it
	// runs. Call it only from the goroutine running Call, before Call
	// returns.
	Report func(ToolStatus)
}

// ToolStatus is a running tool's report of its progress (an MCP server's
// notifications/progress): each becomes a drupal.org/ai.status_item of the
// call. Numbers are kept as the tool sent them.
type ToolStatus struct {
	// Progress is how far the tool is; empty when it did not say.
	Progress json.Number `json:"progress,omitempty"`
	// Total is where Progress ends, when known.
	Total json.Number `json:"total,omitempty"`
	// Message says what the tool is doing.
	Message string `json:"message,omitempty"`
	// Status and StatusMessage are an MCP task's status (working,
	// input_required, completed, failed, cancelled) and what its server
	// says of it, for a tool run as a task.
	Status        string `json:"status,omitempty"`
	StatusMessage string `json:"statusMessage,omitempty"`
}

// ToolResume is the user's answer to a tool's elicitation, with the state the
// tool saved when it paused.
type ToolResume struct {
	Request *elicit.Request
	Result  elicit.Result
	State   json.RawMessage
}

// ToolResult is a finished (or paused) tool call, shaped like an MCP
// CallToolResult.
type ToolResult struct {
	// Content is the result's content blocks, kept exactly: they are
	// appended to the reply's blocks, and summarized as text for the model.
	Content []blocks.ContentBlock
	// StructuredContent is the result as JSON for programs, if any; it goes
	// to the reply's _meta["drupal.org/ai.structured_content"], and to the
	// model when Content is empty.
	StructuredContent json.RawMessage
	// IsError says the tool failed; the model is told so.
	IsError bool
	// Pause, when set, pauses the turn to ask the user; Content and the
	// other fields are ignored.
	Pause *ToolPause
}

// ToolPause asks the user a question on behalf of a tool. State is the
// tool's own, handed back in ToolCall.Resume; it must be JSON.
type ToolPause struct {
	Request *elicit.Request
	State   json.RawMessage
}

// toolNamePattern is the function name OpenAI-compatible APIs accept.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func checkToolName(name string) error {
	if !toolNamePattern.MatchString(name) {
		return fmt.Errorf("tool name %q: want 1 to 64 letters, digits, underscores or hyphens", name)
	}
	return nil
}

// askUserName is the built-in tool that asks the user a structured question.
const askUserName = "ask_user"

// askUserDescription tells the model how to use ask_user; the restriction
// it states is the one internal/elicit enforces, so a model that strays is
// told exactly which field to fix.
const askUserDescription = `Ask the user a structured question and wait for the answer. Use it when you need information or a decision from the user to continue; the chat shows a form built from requestedSchema. requestedSchema is a flat JSON Schema: {"type":"object","properties":{...},"required":[...]}. Each property is one of: {"type":"string"} with optional minLength, maxLength and format (email, uri, date, date-time); {"type":"number"} or {"type":"integer"} with optional minimum, maximum; {"type":"boolean"}; a single choice {"type":"string","enum":[...]}; a multiple choice {"type":"array","items":{"type":"string","enum":[...]}} with optional minItems, maxItems. Every property may have title, description and default. No nested objects, no other arrays, no pattern, no $ref. For a yes/no confirmation use {"type":"object","properties":{}}. The answer comes back as {"action":"accept"|"decline"|"cancel","content":{...}}.`

var askUserParameters = json.RawMessage(`{
  "type": "object",
  "properties": {
    "message": {"type": "string", "description": "The question, shown to the user above the form."},
    "requestedSchema": {"type": "object", "description": "The flat JSON Schema of the form."}
  },
  "required": ["message", "requestedSchema"]
}`)

var askUserDefinition = ToolDefinition{
	Name:        askUserName,
	Description: askUserDescription,
	Parameters:  askUserParameters,
}

// askUserRequest checks the model's ask_user arguments and builds the
// elicitation. The error is what the model is told: chatd's field errors,
// so it can correct the request.
func askUserRequest(arguments json.RawMessage) (*elicit.Request, error) {
	var args struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(arguments, &args); err != nil {
		return nil, fmt.Errorf("arguments must be a JSON object {message, requestedSchema}: %v", err)
	}
	return elicit.NewRequest(args.Message, args.RequestedSchema, nil)
}
