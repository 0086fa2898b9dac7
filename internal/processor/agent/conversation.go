package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"chatd/internal/blocks"
)

// message is one message of the conversation the model sees, in chatd's own
// form rather than the client library's: it is what the pause state stores,
// so the state's format does not change with the library.
type message struct {
	// Role is user, assistant or tool (the system prompt is not stored).
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`

	// parts, when set, is a user message's content as parts (images,
	// audio, files) for the request; Content is its text form, which a
	// pause state keeps.
	parts []wirePart

	// wire is the message encoded for the request, once (see encode).
	wire []byte
}

// encode returns the message as the request's JSON, encoding it the first
// time: a conversation is sent again with every model call of a turn, and
// history messages come encoded from the agent's cache.
func (m *message) encode() []byte {
	if m.wire == nil && m.parts != nil {
		m.wire = encodeParts(m.Role, m.parts)
	}
	if m.wire == nil {
		w := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			w.Content = &m.Content
		}
		for _, c := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: c.ID, Type: "function",
				Function: wireFunction{Name: c.Name, Arguments: c.Arguments}})
		}
		// A struct of strings always encodes.
		m.wire, _ = json.Marshal(w)
	}
	return m.wire
}

// toolCall is a tool call the model made. Arguments is the JSON text the
// model sent, kept as text: models do send invalid JSON, and the model is
// told so rather than the turn failing.
type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

const (
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
)

// storedMessage is what the agent reads of a history message: decoding
// only these fields, and blocks only when a message has some, is a fraction
// of the cost of blocks.Message's exact decoding.
type storedMessage struct {
	ID            string            `json:"id"`
	Role          blocks.Role       `json:"role"`
	Text          string            `json:"message"`
	ContentBlocks []json.RawMessage `json:"content_blocks"`
}

// answerKey is how a recorded answer's _meta key appears in stored JSON.
var answerKey = []byte(`"` + blocks.MetaElicitationResult + `"`)

// historyEntry is one history message as the model sees it.
type historyEntry struct {
	id  string
	msg message
	// skip marks a message with nothing to tell the model.
	skip bool
}

// decodeEntry turns one stored message into what the model sees. Text is
// authoritative; blocks are summarized after it so the model knows what was
// shown. Elicitation questions and answers are already text on their
// messages (the paused assistant message restates the question, the
// recorded answer restates the answer); the answer is marked as one so the
// model reads it as the user's reply to that question.
func decodeEntry(data []byte) (historyEntry, error) {
	var m storedMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return historyEntry{}, err
	}
	role := roleUser
	if m.Role == blocks.RoleAssistant {
		role = roleAssistant
	}
	text := joinText(m.Text, summarizeRaw(m.ContentBlocks))
	// A byte search stands in for decoding the whole _meta: inside a
	// string the key's quotes would be escaped, so it matches only as an
	// object key — the message's own, or in the rare case of the key nested
	// in a block's _meta, a harmless extra label.
	if m.Role == blocks.RoleUser && bytes.Contains(data, answerKey) {
		text = "(answer to the form) " + text
	}
	e := historyEntry{id: m.ID, msg: message{Role: role, Content: text}}
	// An empty turn tells the model nothing, and some APIs refuse empty
	// content.
	e.skip = text == ""
	e.msg.encode()
	return e, nil
}

// historyMessages returns the entries' model messages.
func historyMessages(entries []historyEntry) []message {
	out := make([]message, 0, len(entries)+4)
	for _, e := range entries {
		if !e.skip {
			out = append(out, e.msg)
		}
	}
	return out
}

// summarizeRaw summarizes stored blocks; one that does not decode (history
// holds only validated blocks, so it would be a newer kind) is named by its
// position rather than failing the turn.
func summarizeRaw(raw []json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	list := make([]blocks.ContentBlock, 0, len(raw))
	for _, r := range raw {
		b, err := blocks.Decode(r)
		if err != nil {
			continue
		}
		list = append(list, b)
	}
	return summarizeBlocks(list)
}

func joinText(text, summary string) string {
	switch {
	case summary == "":
		return text
	case text == "":
		return summary
	}
	return text + "\n" + summary
}

// messageText is a message's text followed by a summary of its blocks.
func messageText(m blocks.Message) string {
	return joinText(m.Text, summarizeBlocks(m.ContentBlocks))
}

// summarizeBlocks describes content blocks as text, one line each: a text
// block is its text; others are a bracketed note a model reads as "this was
// shown".
func summarizeBlocks(list []blocks.ContentBlock) string {
	lines := make([]string, 0, len(list))
	for _, b := range list {
		if line := summarizeBlock(b); line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

func summarizeBlock(b blocks.ContentBlock) string {
	switch b.Type() {
	case "text":
		return b.Text()
	case "image", "audio":
		return fmt.Sprintf("[%s: %s]", b.Type(), b.MimeType())
	case "resource_link":
		name := b.Title()
		if name == "" {
			name = b.Name()
		}
		if ref, ok := b.Entity(); ok {
			return fmt.Sprintf("[entity card: %s %s/%s <%s>]", name, ref.EntityType, ref.ID, b.URI())
		}
		return fmt.Sprintf("[link: %s <%s>]", name, b.URI())
	case "resource":
		res, _ := b.Resource()
		if res.Text != nil {
			return fmt.Sprintf("[resource <%s>]\n%s", res.URI, *res.Text)
		}
		return fmt.Sprintf("[resource: %s <%s>]", res.MimeType, res.URI)
	}
	return fmt.Sprintf("[%s block]", b.Type())
}

// wireTool is a function tool of the request.
type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// emptyParameters is the schema of a tool without arguments.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// wireTools encodes tool definitions as the request's tools array; nil when
// there are none, so that a model without tool support is offered none.
func wireTools(defs []ToolDefinition) (json.RawMessage, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	tools := make([]wireTool, len(defs))
	for i, d := range defs {
		t := &tools[i]
		t.Type = "function"
		t.Function.Name, t.Function.Description, t.Function.Parameters = d.Name, d.Description, d.Parameters
		if len(d.Parameters) == 0 {
			t.Function.Parameters = emptyParameters
		} else if !json.Valid(d.Parameters) || bytes.TrimSpace(d.Parameters)[0] != '{' {
			return nil, fmt.Errorf("tool %s: parameters must be a JSON object", d.Name)
		}
	}
	return json.Marshal(tools)
}
