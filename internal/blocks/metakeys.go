package blocks

// The _meta keys chatd defines. docs/meta-keys.md documents each value shape.
const (
	MetaCitations         = "drupal.org/ai.citations"
	MetaSuggestedReplies  = "drupal.org/ai.suggested_replies"
	MetaEntity            = "drupal.org/ai.entity"
	MetaToolCall          = "drupal.org/ai.tool_call"
	MetaStructuredContent = "drupal.org/ai.structured_content"
	MetaStatusItem        = "drupal.org/ai.status_item"
	MetaElicitationID     = "drupal.org/ai.elicitation_id"
	MetaWidgets           = "drupal.org/ai.widgets"
	MetaElicitationResult = "drupal.org/ai.elicitation_result"
)

// RegisteredKeys lists every _meta key chatd defines, in documentation order.
var RegisteredKeys = []string{
	MetaCitations, MetaSuggestedReplies, MetaEntity, MetaToolCall, MetaStructuredContent,
	MetaStatusItem, MetaElicitationID, MetaWidgets, MetaElicitationResult,
}
