package blocks

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

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
	// chatd's additions to the keys of the design it follows.
	MetaStopped = "drupal.org/ai.stopped"
	MetaUsage   = "drupal.org/ai.usage"
)

// RegisteredKeys lists every _meta key chatd defines, in documentation order.
var RegisteredKeys = []string{
	MetaCitations, MetaSuggestedReplies, MetaEntity, MetaToolCall, MetaStructuredContent,
	MetaStatusItem, MetaElicitationID, MetaWidgets, MetaElicitationResult, MetaStopped,
	MetaUsage,
}

// RecordKeys are the _meta keys with which chatd records the elicitation
// protocol in history. chatd alone writes them: a client that could set one
// could forge a question or an answer in a replayed conversation.
var RecordKeys = []string{MetaElicitationID, MetaElicitationResult}

// IsRecordKey reports whether key is one of RecordKeys. The prefix is a
// domain name and compared case-insensitively (DRUPAL.ORG/ai.elicitation_id
// is the same key to anyone who reads it as one); the name exactly.
func IsRecordKey(key string) bool {
	prefix, name, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, rk := range RecordKeys {
		rp, rn, _ := strings.Cut(rk, "/")
		if name == rn && strings.EqualFold(prefix, rp) {
			return true
		}
	}
	return false
}

// ErrInvalidMetaKey is wrapped by every error ValidateMetaKey returns.
var ErrInvalidMetaKey = errors.New("invalid _meta key")

// ErrReservedMetaKey is wrapped by the error ValidateMintedMetaKey returns for
// a grammatical key whose prefix MCP reserves for itself.
var ErrReservedMetaKey = errors.New("reserved _meta key")

// ValidateMetaKey checks one _meta key against the MCP key grammar: an
// optional prefix of dot-separated labels ended by a single "/", then a name.
// chatd is stricter than MCP in one point: the name must not be empty, so ""
// and "drupal.org/" are invalid (a key must name something). Reserved MCP
// keys are valid here; see ValidateMintedMetaKey.
func ValidateMetaKey(key string) error {
	if p := metaKeyProblem(key); p != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidMetaKey, key, p)
	}
	return nil
}

// ValidateMintedMetaKey checks a key chatd itself is about to write: it must
// satisfy ValidateMetaKey and must not be reserved for MCP (IsReservedMetaKey).
// Keys received from clients or MCP servers are checked with ValidateMetaKey
// only, since MCP's own keys legitimately travel through chatd.
func ValidateMintedMetaKey(key string) error {
	if err := ValidateMetaKey(key); err != nil {
		return err
	}
	if IsReservedMetaKey(key) {
		return fmt.Errorf("%w %q: the prefix is reserved for MCP", ErrReservedMetaKey, key)
	}
	return nil
}

// IsReservedMetaKey reports whether key has a prefix MCP reserves for its own
// use. MCP 2025-11-25 reserves every prefix whose second label is
// "modelcontextprotocol" or "mcp" (io.modelcontextprotocol/, dev.mcp/);
// MCP 2025-06-18 worded the rule for forward domain order (mcp.dev/,
// api.modelcontextprotocol.org/: the label followed by another label). chatd
// speaks both versions, so either form counts, compared case-insensitively.
// A key without a prefix is never reserved.
func IsReservedMetaKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	labels := strings.Split(prefix, ".")
	for i, l := range labels {
		if !isReservedLabel(l) {
			continue
		}
		if i == 1 || i < len(labels)-1 {
			return true
		}
	}
	return false
}

func isReservedLabel(l string) bool {
	return strings.EqualFold(l, "modelcontextprotocol") || strings.EqualFold(l, "mcp")
}

// metaKeyProblem returns why key breaks the grammar, or "" when it does not.
func metaKeyProblem(key string) string {
	if key == "" {
		return "key is empty"
	}
	name := key
	if prefix, rest, ok := strings.Cut(key, "/"); ok {
		if prefix == "" {
			return "prefix before \"/\" is empty"
		}
		for _, label := range strings.Split(prefix, ".") {
			if p := labelProblem(label); p != "" {
				return p
			}
		}
		name = rest
		if name == "" {
			return "name after the prefix is empty"
		}
		if strings.Contains(name, "/") {
			return "name must not contain \"/\" (use a dot: <domain>/<module>.<name>)"
		}
	}
	if !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return "name must begin and end with a letter or digit"
	}
	for i := 1; i < len(name)-1; i++ {
		c := name[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return fmt.Sprintf("name must contain only letters, digits, \"-\", \"_\" and \".\", not %q", rune(c))
		}
	}
	return ""
}

func labelProblem(label string) string {
	switch {
	case label == "":
		return "prefix has an empty label"
	case !isLetter(label[0]):
		return fmt.Sprintf("prefix label %q must start with a letter", label)
	case !isAlnum(label[len(label)-1]):
		return fmt.Sprintf("prefix label %q must end with a letter or digit", label)
	}
	for i := 1; i < len(label)-1; i++ {
		if c := label[i]; !isAlnum(c) && c != '-' {
			return fmt.Sprintf("prefix label %q must contain only letters, digits and \"-\"", label)
		}
	}
	return ""
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isAlnum(c byte) bool { return isLetter(c) || '0' <= c && c <= '9' }

// ValidateMeta checks the keys of a _meta object against the key grammar
// (ValidateMetaKey); the values are free-form and not inspected. Each
// violation is reported at path followed by the key in brackets and JSON
// quotes, for example _meta["drupal.org/ai/citations"] or
// content_blocks[0]._meta["bad key"], because keys themselves contain dots
// and slashes. It returns a *ValidationError listing every bad key, in key
// order, or nil.
func ValidateMeta(meta map[string]any, path string) error {
	var ve ValidationError
	validateMetaKeys(meta, path, &ve)
	return ve.Err()
}

func validateMetaKeys(meta map[string]any, path string, ve *ValidationError) {
	var bad []string
	for k := range meta {
		if metaKeyProblem(k) != "" {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	for _, k := range bad {
		ve.Add(metaKeyPath(path, k), "invalid key: "+metaKeyProblem(k))
	}
}

func metaKeyPath(path, key string) string {
	return JoinPath(path, "["+string(appendString(nil, key))+"]")
}
