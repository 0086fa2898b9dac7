package demo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		text string
		want command
	}{
		{"help", cmdHelp},
		{"HELP!", cmdHelp},
		{"what commands are there?", cmdHelp},
		{"hello", cmdHelp},
		{"card", cmdCard},
		{"Show me a card", cmdCard},
		{"show article", cmdCard},
		{"cards please", cmdCard},
		{"show", cmdCard},
		{"sources", cmdSources},
		{"cite", cmdSources},
		{"Cite your sources.", cmdSources},
		{"book", cmdBook},
		{"EVENT", cmdBook},
		{"I'd like to book a meeting", cmdBook},
		{"delete", cmdDelete},
		{"remove them", cmdDelete},
		{"tags", cmdTags},
		{"Topics?", cmdTags},
		{"show me the topics", cmdTags},
		{"stream", cmdStream},
		{"tell me a story", cmdStream},
		{"delete the event", cmdDelete},
		{"", cmdUnknown},
		{"what is the weather", cmdUnknown},
		{"¿qué?", cmdUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			assert.Equal(t, tt.want, parseCommand(tt.text))
		})
	}
}

func TestCommandsReply(t *testing.T) {
	tests := []struct {
		text       string
		wantPause  bool
		wantBlocks int
		wantInText []string
	}{
		{text: "help", wantInText: []string{"card", "sources", "book", "delete", "tags", "stream", "help"}},
		{text: "blah blah", wantInText: []string{"not sure", "card", "sources", "book", "delete", "tags"}},
		{text: "", wantInText: []string{"card", "sources"}},
		{text: "show article", wantBlocks: 1, wantInText: []string{"entity:node/42", cardTitle}},
		{text: "cite", wantBlocks: len(demoSources), wantInText: []string{"[1]", "[2]", "[3]"}},
		{text: "stream", wantInText: []string{"text.delta"}},
		{text: "book", wantPause: true, wantInText: []string{"title", "date", "attendees", "Aurora", "Borealis", "Cosmos"}},
		{text: "delete", wantPause: true, wantInText: []string{"Delete 10 items?"}},
		{text: "tags", wantPause: true, wantInText: []string{"Content blocks", "Streaming"}},
	}
	p := newTestProcessor(t)
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			out, deltas := mustProcess(t, p, userInput(tt.text))
			assert.Greater(t, len(deltas), 1, "a reply streams in several pieces")
			assert.Equal(t, tt.wantPause, out.Pause != nil)
			assert.Len(t, out.Blocks, tt.wantBlocks)
			for _, want := range tt.wantInText {
				assert.Contains(t, out.Text, want)
			}
			if !tt.wantPause {
				assert.NotEmpty(t, suggestedReplies(t, out))
			}
		})
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	p := newTestProcessor(t)
	out, _ := mustProcess(t, p, userInput("help"))

	replies := suggestedReplies(t, out)
	var routed []command
	for _, r := range replies {
		routed = append(routed, parseCommand(r))
	}
	assert.ElementsMatch(t, []command{cmdCard, cmdSources, cmdBook, cmdDelete, cmdTags, cmdStream}, routed)
	for _, word := range []string{"card", "sources", "book", "delete", "tags", "stream"} {
		assert.Contains(t, out.Text, "- "+word+":")
	}
}
