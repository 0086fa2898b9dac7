package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// A 2026-07-28 server runs a tool as a task of the tasks extension
// (io.modelcontextprotocol/tasks), which chatd declares in every request's
// capabilities: the server may answer tools/call with a task handle
// (resultType "task") instead of the result. chatd then polls tasks/get at
// the task's pollIntervalMs until the task ends with its result (or its
// JSON-RPC error) inlined, reporting each status change as the call's. A
// task that needs input says input_required and lists its inputRequests:
// each is asked like a question inside a 2025-era call (the call is held on
// this instance while the user answers, on any instance), and the answers
// go back in tasks/update. A stop or the turn timeout sends tasks/cancel.
// go-sdk has none of these requests: they go through the session's
// taskSender, each carrying the per-request _meta 2026-07-28 requires.

// extTasks names the tasks extension.
const extTasks = "io.modelcontextprotocol/tasks"

// clientCapabilities are what chatd declares to every server: both
// elicitation modes, so servers offer the tools that need them, and the
// tasks extension. No roots: chatd does not share a file system with its
// servers.
func clientCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		Extensions:  map[string]any{extTasks: map[string]any{}},
	}
}

// taskHandle reads a 2026-07-28 CreateTaskResult: a task in lieu of the
// tool's result.
func taskHandle(raw json.RawMessage) (task, bool) {
	var r struct {
		ResultType string `json:"resultType"`
		task
	}
	if json.Unmarshal(raw, &r) != nil || r.ResultType != "task" || r.TaskID == "" {
		return task{}, false
	}
	return r.task, true
}

// followTask follows a task the server created in lieu of the call's
// result and returns the result it ends with.
func (c *call) followTask(ctx context.Context, t task) (json.RawMessage, error) {
	c.task = true
	c.noteStatus(t)
	answered := map[string]bool{}
	for {
		switch t.Status {
		case "completed":
			if len(t.Result) == 0 || t.Result[0] != '{' {
				return nil, fmt.Errorf("the server's task completed without a result")
			}
			return t.Result, nil
		case "failed":
			if t.Error != nil {
				return nil, fmt.Errorf("the server's task failed: %w", t.Error)
			}
			return nil, fmt.Errorf("the server's task failed: %s", t.StatusMessage)
		case "cancelled":
			return nil, fmt.Errorf("the server cancelled the task: %s", t.StatusMessage)
		case "input_required":
			if err := c.answerTask(ctx, t, answered); err != nil {
				if ctx.Err() != nil {
					return nil, c.cancelTask(t.TaskID, ctx.Err())
				}
				return nil, c.cancelTask(t.TaskID, err)
			}
		}
		var err error
		if t, err = c.awaitTask(ctx, t, nil); err != nil {
			return nil, err
		}
	}
}

// answerTask asks the user the task's input requests chatd has not
// answered yet (a server lists them on every poll until it has their
// answers), in key order, and sends the answers in one tasks/update.
func (c *call) answerTask(ctx context.Context, t task, answered map[string]bool) error {
	keys := make([]string, 0, len(t.InputRequests))
	for k := range t.InputRequests {
		if !answered[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	responses := make(map[string]any, len(keys))
	for _, k := range keys {
		ir := t.InputRequests[k]
		switch ir.Method {
		case "elicitation/create":
			var params mcp.ElicitParams
			if err := json.Unmarshal(ir.Params, &params); err != nil {
				return fmt.Errorf("the server's task asked an invalid question: %v", err)
			}
			res, err := c.s.askInCall(ctx, c, &params)
			if err != nil {
				return err
			}
			responses[k] = res
		case "roots/list":
			responses[k] = map[string]any{"roots": []any{}}
		default:
			return fmt.Errorf("the server's task asked for %s, which chatd does not provide", ir.Method)
		}
		answered[k] = true
	}
	_, err := c.x.tasks.call(ctx, "tasks/update", c.taskParams(ctx, t.TaskID, responses))
	return err
}

// taskParams are the params of a request about task id: on a 2026-07-28
// session with the _meta every request of that generation carries (its
// protocol version, chatd's identity and capabilities, the trace context).
func (c *call) taskParams(ctx context.Context, id string, responses map[string]any) map[string]any {
	p := map[string]any{"taskId": id}
	if responses != nil {
		p["inputResponses"] = responses
	}
	if init := c.x.cs.InitializeResult(); init != nil && usesRequestMeta(c.x.cs) {
		meta := mcp.Meta{
			mcp.MetaKeyProtocolVersion:    init.ProtocolVersion,
			mcp.MetaKeyClientInfo:         clientInfo,
			mcp.MetaKeyClientCapabilities: clientCapabilities(),
		}
		propagation.TraceContext{}.Inject(ctx, metaCarrier(meta))
		p["_meta"] = meta
	}
	return p
}
