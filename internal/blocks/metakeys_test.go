package blocks

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetaKeyGrammar(t *testing.T) {
	tests := []struct {
		key      string
		valid    bool // accepted when received
		reserved bool // refused when chatd mints it
	}{
		{key: "drupal.org/ai.citations", valid: true},
		{key: "drupal.org/ai/citations"},
		{key: "drupal.org/", valid: false}, // empty name after a prefix: chatd requires a name
		{key: ""},
		{key: "/name"},
		{key: "citations", valid: true},
		{key: "progressToken", valid: true},
		{key: "a", valid: true},
		{key: "7", valid: true},
		{key: "x/y", valid: true},
		{key: "a-b.c_d.e", valid: true},
		{key: "example.com/my-module.some_name.v2", valid: true},
		{key: "sub-domain.example9.com/x", valid: true},
		{key: "1drupal.org/x"},           // label starts with a digit
		{key: "drupal.9org/x"},           // later label starts with a digit
		{key: "drupal-.org/x"},           // label ends with a hyphen
		{key: "-drupal.org/x"},           // label starts with a hyphen
		{key: "drupal..org/x"},           // empty label
		{key: ".drupal.org/x"},           // empty first label
		{key: "dru_pal.org/x"},           // underscore in a label
		{key: "drupal.org//x"},           // two slashes
		{key: "drupal.org/-x"},           // name starts with a hyphen
		{key: "drupal.org/x."},           // name ends with a dot
		{key: "_private"},                // name starts with an underscore
		{key: "bad key"},                 // space
		{key: "drupal.org/ai.citätions"}, // non-ASCII
		{key: "io.modelcontextprotocol/x", valid: true, reserved: true},
		{key: "io.modelcontextprotocol/related-task", valid: true, reserved: true},
		{key: "dev.mcp/x", valid: true, reserved: true},
		{key: "com.mcp.tools/x", valid: true, reserved: true},
		{key: "org.modelcontextprotocol.api/x", valid: true, reserved: true},
		{key: "io.MCP/x", valid: true, reserved: true},
		{key: "mcp.dev/x", valid: true, reserved: true},                      // MCP 2025-06-18 wording
		{key: "api.modelcontextprotocol.org/x", valid: true, reserved: true}, // MCP 2025-06-18 wording
		{key: "com.example.mcp/x", valid: true},                              // mcp is the last label, not the second
		{key: "mcp/x", valid: true},
		{key: "mcpx.dev/x", valid: true},
		{key: "modelcontextprotocol", valid: true}, // no prefix at all
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			err := ValidateMetaKey(tc.key)
			if tc.valid {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrInvalidMetaKey)
			}
			assert.Equal(t, tc.reserved, IsReservedMetaKey(tc.key))

			mintErr := ValidateMintedMetaKey(tc.key)
			switch {
			case !tc.valid:
				assert.ErrorIs(t, mintErr, ErrInvalidMetaKey)
			case tc.reserved:
				assert.ErrorIs(t, mintErr, ErrReservedMetaKey)
			default:
				assert.NoError(t, mintErr)
			}
		})
	}
}

func TestValidateMetaKeyMessage(t *testing.T) {
	tests := []struct {
		key  string
		want string
	}{
		{"drupal.org/ai/citations", `invalid _meta key "drupal.org/ai/citations": name must not contain "/" (use a dot: <domain>/<module>.<name>)`},
		{"1a.org/x", `invalid _meta key "1a.org/x": prefix label "1a" must start with a letter`},
		{"a-.org/x", `invalid _meta key "a-.org/x": prefix label "a-" must end with a letter or digit`},
		{"drupal.org/", `invalid _meta key "drupal.org/": name after the prefix is empty`},
		{"", `invalid _meta key "": key is empty`},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			err := ValidateMetaKey(tc.key)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestValidateMeta(t *testing.T) {
	tests := []struct {
		name string
		meta map[string]any
		path string
		want []FieldError
	}{
		{name: "nil", meta: nil, path: "_meta"},
		{name: "valid keys, free-form values", meta: map[string]any{MetaCitations: []any{map[string]any{"bad key": 1}}, "io.modelcontextprotocol/x": nil}, path: "_meta"},
		{name: "every bad key in order", path: "_meta", meta: map[string]any{"z z": 1, "drupal.org/ai/citations": 2, "ok": 3}, want: []FieldError{
			{`_meta["drupal.org/ai/citations"]`, `invalid key: name must not contain "/" (use a dot: <domain>/<module>.<name>)`},
			{`_meta["z z"]`, `invalid key: name must contain only letters, digits, "-", "_" and ".", not ' '`},
		}},
		{name: "nested path and quoting", path: "content_blocks[0]._meta", meta: map[string]any{"say \"hi\"": 1}, want: []FieldError{
			{`content_blocks[0]._meta["say \"hi\""]`, "invalid key: name must begin and end with a letter or digit"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateMeta(tc.meta, tc.path)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			requireFieldErrors(t, tc.want, err)
		})
	}
}

// TestRegisteredKeysMintableAndDocumented keeps the registry and
// docs/meta-keys.md from drifting apart.
func TestRegisteredKeysMintableAndDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/meta-keys.md")
	require.NoError(t, err)
	for _, k := range RegisteredKeys {
		assert.NoError(t, ValidateMintedMetaKey(k), k)
		assert.True(t, strings.HasPrefix(k, "drupal.org/ai."), k)
		assert.Contains(t, string(doc), "## `"+k+"`", "docs/meta-keys.md must have a section for %s", k)
	}
}
