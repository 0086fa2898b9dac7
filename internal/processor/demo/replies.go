package demo

// Replies that point onwards: suggested replies, status items, and the
// answer with numbered citations and its resource links.

import (
	"fmt"

	"chatd/internal/blocks"
	"chatd/internal/processor"
)

// suggestion is one suggested reply; each one routes back to a command
// through parseCommand, which the tests check.
type suggestion struct {
	text string
	cmd  command
}

var allSuggestions = []suggestion{
	{"Show me a card", cmdCard},
	{"Cite your sources", cmdSources},
	{"Book an event", cmdBook},
	{"Delete 10 items", cmdDelete},
	{"Pick topics", cmdTags},
	{"Stream a story", cmdStream},
	{"Help", cmdHelp},
}

// suggestions returns the suggested-replies value: every command except
// the one just shown, so the tour moves on.
func suggestions(except command) []string {
	out := make([]string, 0, len(allSuggestions))
	for _, s := range allSuggestions {
		if s.cmd != except {
			out = append(out, s.text)
		}
	}
	return out
}

func suggestMeta(except command) map[string]any {
	return map[string]any{blocks.MetaSuggestedReplies: suggestions(except)}
}

// statusMeta returns _meta holding a drupal.org/ai.status_item: a short
// progress or outcome line a frontend may show beside the message; state is
// running, done or failed.
func statusMeta(id, label, state string) map[string]any {
	return map[string]any{blocks.MetaStatusItem: map[string]any{
		"id":    id,
		"label": label,
		"state": state,
	}}
}

// source is one reference of the sourced answer.
type source struct {
	uri, name, title, description, snippet string
}

// sourceLinks returns the resource_link blocks of sources, in order.
func sourceLinks(sources []source) ([]blocks.ContentBlock, error) {
	links := make([]blocks.ContentBlock, len(sources))
	for i, s := range sources {
		link, err := blocks.ResourceLink(s.uri, s.name, blocks.LinkOptions{
			Title:       s.title,
			Description: s.description,
			MimeType:    "text/html",
		})
		if err != nil {
			return nil, fmt.Errorf("demo: source %d: %w", i+1, err)
		}
		links[i] = link
	}
	return links, nil
}

// demoSources back the sourced answer; block_index in the citations points
// at their resource_link blocks, which are the reply's only blocks.
var demoSources = []source{
	{
		uri:         "https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation",
		name:        "mcp-elicitation",
		title:       "Elicitation — Model Context Protocol 2025-11-25",
		description: "How a server asks the user for structured input during a task.",
		snippet:     "Elicitation allows servers to request additional information from users through the client during interactions.",
	},
	{
		uri:         "https://modelcontextprotocol.io/specification/2025-06-18/server/tools",
		name:        "mcp-tools",
		title:       "Tools — Model Context Protocol 2025-06-18",
		description: "Tool results and the content block types they carry.",
		snippet:     "Tool results may contain text, images, audio, resource links and embedded resources.",
	},
	{
		uri:         "https://www.drupal.org/project/ai",
		name:        "drupal-ai",
		title:       "AI (Artificial Intelligence) — Drupal module",
		description: "The Drupal AI module, whose chat conventions chatd follows.",
		snippet:     "The AI module provides a unified framework for integrating AI providers into Drupal.",
	},
}

const sourcesText = `Q: How does chatd ask a user a structured question?
A: It pauses the turn with an MCP elicitation: a message plus a flat JSON schema that the frontend renders as a form [1]. The answer comes back as accept, decline or cancel, and the processor resumes where it left off. Replies can also carry MCP content blocks such as resource links [2], following the conventions of the Drupal AI module [3].

Sources:
[1] %s — %s
[2] %s — %s
[3] %s — %s`

func (p *Processor) sourcesReply() reply {
	args := make([]any, 0, 2*len(p.sources))
	citations := make([]any, len(p.sources))
	for i, s := range p.sources {
		args = append(args, s.title, s.uri)
		citations[i] = map[string]any{
			"uri":         s.uri,
			"title":       s.title,
			"snippet":     s.snippet,
			"block_index": i,
		}
	}
	// The status item streamed while the answer arrives is replaced (same
	// id) by the outcome on the message.
	meta := statusMeta("search", fmt.Sprintf("Found %d sources", len(p.sources)), "done")
	meta[blocks.MetaSuggestedReplies] = suggestions(cmdSources)
	meta[blocks.MetaCitations] = citations
	return reply{
		out: processor.Output{
			Text:   fmt.Sprintf(sourcesText, args...),
			Blocks: append([]blocks.ContentBlock(nil), p.links...),
			Meta:   meta,
		},
		progress: statusMeta("search", "Searching the documentation", "running"),
	}
}
