package agent

import (
	"encoding/json"
	"fmt"
)

// stateVersion is the version of the pause state's format. A state of
// another version is refused rather than misread: a chatd that changes the
// format must bump it (and may read the old one).
const stateVersion = 1

// pauseState is everything a paused agent turn needs to continue on any
// instance with a fresh processor. chatd persists it as opaque bytes with the
// pending elicitation; it is JSON:
//
//	{"v": 1,
//	 "since": "<ID of the user message that began the exchange>",
//	 "messages": [<the conversation from that message on: user, assistant with
//	              tool_calls, tool results>],
//	 "pending": {"kind": "ask_user" | "confirm" | "tool",
//	             "call": {"id", "name", "arguments"},
//	             "tool_state": <the tool's own state, for kind tool>},
//	 "queue": [<tool calls of the same model reply still to run, in order>]}
//
// On resume the history window is cut before "since" (the exchange is in
// "messages", in more detail than history keeps it), the pending call is
// settled with the user's answer, the queue runs, and the model is called
// again.
type pauseState struct {
	Version  int         `json:"v"`
	Since    string      `json:"since"`
	Messages []message   `json:"messages"`
	Pending  pendingCall `json:"pending"`
	Queue    []toolCall  `json:"queue,omitempty"`
}

// pendingCall is the tool call a turn paused on.
type pendingCall struct {
	Kind      string          `json:"kind"`
	Call      toolCall        `json:"call"`
	ToolState json.RawMessage `json:"tool_state,omitempty"`
}

// The kinds of pending call.
const (
	// pendingAskUser: the model asked the user (ask_user); the answer is
	// the call's result.
	pendingAskUser = "ask_user"
	// pendingConfirm: the tool needs the user's confirmation before it runs.
	pendingConfirm = "confirm"
	// pendingTool: the tool itself asked the user and continues with the
	// answer (an MCP server's elicitation).
	pendingTool = "tool"
)

func (s pauseState) encode() ([]byte, error) {
	s.Version = stateVersion
	return json.Marshal(s)
}

func decodeState(data []byte) (pauseState, error) {
	var s pauseState
	if err := json.Unmarshal(data, &s); err != nil {
		return pauseState{}, err
	}
	if s.Version != stateVersion {
		return pauseState{}, fmt.Errorf("pause state version %d, want %d", s.Version, stateVersion)
	}
	switch s.Pending.Kind {
	case pendingAskUser, pendingConfirm, pendingTool:
	default:
		return pauseState{}, fmt.Errorf("pause state: unknown pending kind %q", s.Pending.Kind)
	}
	return s, nil
}
