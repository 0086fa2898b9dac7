package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"chatd/internal/processor/agent"
)

// A tool whose execution.taskSupport is "required" (MCP 2025-11-25) runs as
// a task: tools/call with a task field answers at once with the task, whose
// status chatd polls with tasks/get at the server's pollInterval, reporting
// each change as the call's status; tasks/result then gives the tool's
// result. A task that needs input says input_required: tasks/result is
// called at once, and the server sends its elicitation/create while it is
// open, which reaches the user like any question inside a call. A stop or
// the turn timeout cancels the task with tasks/cancel. go-sdk knows none of
// these requests, so chatd sends them itself through a taskSender: on the
// session's connection over stdio, as POSTs of its own on the session over
// streamable HTTP (httpSender).

// taskSender sends a request go-sdk does not know on a session and returns
// its result. What the server sends meanwhile (progress, questions) reaches
// the call in flight on the session.
type taskSender interface {
	call(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// task is a task's state as tasks/get and CreateTaskResult carry it. The
// 2025-11-25 generation says pollInterval; the 2026-07-28 extension says
// pollIntervalMs and inlines the result, the error or the input requests.
type task struct {
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage"`
	PollInterval   float64                 `json:"pollInterval"`
	PollIntervalMs float64                 `json:"pollIntervalMs"`
	Result         json.RawMessage         `json:"result"`
	Error          *jsonrpc.Error          `json:"error"`
	InputRequests  map[string]inputRequest `json:"inputRequests"`
}

// inputRequest is one of a 2026-07-28 task's requests to the client.
type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Poll intervals are the server's, within reason.
const (
	minPoll     = 50 * time.Millisecond
	defaultPoll = time.Second
	maxPoll     = 10 * time.Second
)

func (t task) poll() time.Duration {
	ms := t.PollInterval
	if t.PollIntervalMs > 0 {
		ms = t.PollIntervalMs
	}
	if ms <= 0 {
		return defaultPoll
	}
	d := time.Duration(ms * float64(time.Millisecond))
	return min(max(d, minPoll), maxPoll)
}

// runTask runs the call as a task and ends it with the task's result.
func (c *call) runTask(ctx context.Context, params *mcp.CallToolParams) {
	raw, err := c.driveTask(ctx, params)
	c.done <- outcome{raw: raw, err: err}
}

func (c *call) driveTask(ctx context.Context, params *mcp.CallToolParams) (json.RawMessage, error) {
	created, err := c.createTask(ctx, params)
	if err != nil {
		return nil, err
	}
	t, ok := createdTask(created)
	if !ok {
		// The server ran the tool at once after all: this is its result.
		return created, nil
	}
	c.noteStatus(t)
	notes, unwatch := c.watchTask(t.TaskID)
	defer unwatch()
	for {
		switch t.Status {
		case "input_required", "completed", "failed":
			// tasks/result waits for the end, delivering the server's
			// questions meanwhile.
			res, err := c.x.tasks.call(ctx, "tasks/result", c.taskParams(ctx, t.TaskID, nil))
			if ctx.Err() != nil {
				return nil, c.cancelTask(t.TaskID, ctx.Err())
			}
			return res, err
		case "cancelled":
			return nil, fmt.Errorf("the server cancelled the task: %s", t.StatusMessage)
		}
		if t, err = c.awaitTask(ctx, t, notes); err != nil {
			return nil, err
		}
	}
}

// watchTask returns the channel on which the server's status
// notifications of task id arrive (notifications/tasks/status), the
// latest only, until unwatch is called.
func (c *call) watchTask(id string) (<-chan task, func()) {
	notes := make(chan task, 1)
	unwatch := c.s.cap.watchTask(id, func(t task) {
		for {
			select {
			case notes <- t:
				return
			default:
				select {
				case <-notes: // make room: an older state is of no use
				default:
				}
			}
		}
	})
	return notes, unwatch
}

// awaitTask waits the task's poll interval, or less when the server says
// the task changed, then returns its state (from tasks/get, or the
// notification), reporting a change of status or statusMessage. A call
// whose ctx ends cancels the task.
func (c *call) awaitTask(ctx context.Context, t task, notes <-chan task) (task, error) {
	var next task
	select {
	case next = <-notes:
	case <-time.After(t.poll()):
		data, err := c.x.tasks.call(ctx, "tasks/get", c.taskParams(ctx, t.TaskID, nil))
		if ctx.Err() != nil {
			return t, c.cancelTask(t.TaskID, ctx.Err())
		}
		if err != nil {
			return t, err
		}
		if err := json.Unmarshal(data, &next); err != nil || next.Status == "" {
			return t, fmt.Errorf("tasks/get: the server's answer is not a task")
		}
	case <-ctx.Done():
		return t, c.cancelTask(t.TaskID, ctx.Err())
	}
	if next.Status != t.Status || next.StatusMessage != t.StatusMessage {
		c.noteStatus(next)
	}
	next.TaskID = t.TaskID
	return next, nil
}

// createWait bounds the task-creating tools/call once the call's own
// context has ended.
const createWait = 30 * time.Second

// createTask sends the tools/call that creates the task. A stop that comes
// while it is on its way must still cancel the task the server is
// creating, so the request outlives ctx: the call returns at once, and the
// task, when its ID arrives, is cancelled.
func (c *call) createTask(ctx context.Context, params *mcp.CallToolParams) (json.RawMessage, error) {
	type answer struct {
		raw json.RawMessage
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createWait)
		defer cancel()
		raw, err := c.x.tasks.call(rctx, "tools/call", map[string]any{
			"name": params.Name, "arguments": params.Arguments, "task": map[string]any{}, "_meta": params.Meta})
		answered <- answer{raw, err}
	}()
	select {
	case a := <-answered:
		return a.raw, a.err
	case <-ctx.Done():
		go func() {
			if t, ok := createdTask((<-answered).raw); ok {
				_ = c.cancelTask(t.TaskID, nil)
			}
		}()
		return nil, ctx.Err()
	}
}

// createdTask is the task a tools/call answer created, if it did.
func createdTask(raw json.RawMessage) (task, bool) {
	var r struct {
		Task *task `json:"task"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Task == nil || r.Task.TaskID == "" {
		return task{}, false
	}
	return *r.Task, true
}

// noteStatus reports a task's status as the call's.
func (c *call) noteStatus(t task) {
	c.noteProgress(agent.ToolStatus{Status: t.Status, StatusMessage: t.StatusMessage})
}

// cancelTask tells the server to stop the task, on the call's behalf
// (whose own context has ended), and returns why.
func (c *call) cancelTask(id string, why error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.x.tasks.call(ctx, "tasks/cancel", c.taskParams(ctx, id, nil)); err != nil {
		c.s.m.opts.Logger.Info("mcp tasks/cancel failed", "mcp_server", c.s.cfg.Name, "error", err.Error())
	}
	return why
}
