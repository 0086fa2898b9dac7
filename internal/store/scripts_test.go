package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLuaPrelude: a script carries the helpers its body calls and those
// they call in turn, in their order, and no others.
func TestLuaPrelude(t *testing.T) {
	defines := func(src, name string) bool {
		return strings.Contains(src, "local function "+name+"(") || strings.Contains(src, "local "+name+" ")
	}
	page := luaPrelude("return hist_page(KEYS[1], KEYS[2], KEYS[3], KEYS[4], 10, '')")
	for _, name := range []string{"hist_page", "hist_open", "hist_state", "hist_upgrade", "hist_put", "seal", "id_less",
		"hist_position", "hist_range", "chunk", "chunks", "chunk_top", "chunk_lens", "hmget_all", "CHUNK, LIVE"} {
		assert.True(t, defines(page, name), "a history page needs %s", name)
	}
	for _, name := range []string{"hist_append", "close_log", "lock_parts", "owned_thread", "now_ms"} {
		assert.False(t, defines(page, name), "a history page does not call %s", name)
	}
	assert.Less(t, strings.Index(page, "local function id_less("), strings.Index(page, "local function seal("), "in their order")

	// A name inside another (chunk in chunk_of) is not a reference; a
	// helper's comment comes with it.
	of := luaPrelude("return chunk_of(5)")
	assert.True(t, defines(of, "chunk_of"))
	assert.True(t, defines(of, "CHUNK, LIVE"), "chunk_of uses CHUNK")
	assert.False(t, defines(of, "chunk"))
	assert.Contains(t, luaPrelude("local t = owned_thread(KEYS[1], ARGV[1])"), "-- owned_thread returns")
	assert.Empty(t, luaPrelude("return 1"))
}
