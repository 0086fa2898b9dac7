package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

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

// historyMessages turns chatd history into model messages. Text is
// authoritative; blocks are summarized after it so the model knows what was
// shown. Elicitation questions and answers are already text on their
// messages (the paused assistant message restates the question, the recorded
// answer restates the answer); the answer is marked as one so the model
// reads it as the user's reply to that question.
func historyMessages(history []blocks.Message) []message {
	out := make([]message, 0, len(history))
	for _, m := range history {
		role := roleUser
		if m.Role == blocks.RoleAssistant {
			role = roleAssistant
		}
		text := messageText(m)
		if _, ok := m.Meta[blocks.MetaElicitationResult]; ok && m.Role == blocks.RoleUser {
			text = "(answer to the form) " + text
		}
		if text == "" {
			continue // an empty turn tells the model nothing, and some APIs refuse empty content
		}
		out = append(out, message{Role: role, Content: text})
	}
	return out
}

// messageText is a message's text followed by a summary of its blocks.
func messageText(m blocks.Message) string {
	summary := summarizeBlocks(m.ContentBlocks)
	switch {
	case summary == "":
		return m.Text
	case m.Text == "":
		return summary
	}
	return m.Text + "\n" + summary
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

// params converts the conversation to the client library's messages, the
// system prompt first.
func params(system string, conv []message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(conv)+1)
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	for _, m := range conv {
		switch m.Role {
		case roleUser:
			out = append(out, openai.UserMessage(m.Content))
		case roleTool:
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case roleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name: c.Name, Arguments: c.Arguments,
						},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	return out
}

// toolParams converts tool definitions to the client library's tools.
func toolParams(defs []ToolDefinition) ([]openai.ChatCompletionToolUnionParam, error) {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(defs))
	for _, d := range defs {
		fn := openai.FunctionDefinitionParam{Name: d.Name}
		if d.Description != "" {
			fn.Description = openai.String(d.Description)
		}
		if len(d.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(d.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("tool %s: parameters must be a JSON object: %w", d.Name, err)
			}
			fn.Parameters = schema
		} else {
			fn.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out = append(out, openai.ChatCompletionFunctionTool(fn))
	}
	return out, nil
}
