package store

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"chatd/internal/redistest"
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

	// A function with a link marker defines what it calls inside itself,
	// so the script's top carries none of it.
	begin := linkScript("begin_turn.lua")
	at := strings.Index(begin, "local function read_window(n)\n")
	require.GreaterOrEqual(t, at, 0, "begin_turn.lua defines read_window")
	const call = "return hist_window(KEYS[1], KEYS[4], KEYS[5], KEYS[8], n)\nend\n"
	end := strings.Index(begin, call)
	require.Greater(t, end, at, "read_window ends with its call")
	lazy := begin[at : end+len(call)]
	assert.NotContains(t, lazy, luaLinkMarker, "the marker is replaced")
	for _, name := range []string{"hist_window", "hist_open", "hist_range", "seal"} {
		assert.True(t, defines(lazy, name), "the lazy function defines %s", name)
		assert.False(t, defines(begin[:at], name), "the script's top does not define %s", name)
	}
	assert.Empty(t, luaPrelude("return read_window(5)"), "read_window is no helper of the top")
}

// TestLuaLib: every helper calls only helpers defined before it, so a
// script's prelude defines each before its first use.
func TestLuaLib(t *testing.T) {
	require.NotEmpty(t, luaLib)
	for i, d := range luaLib {
		for _, later := range luaLib[i+1:] {
			assert.False(t, later.referredBy(d.code), "%v calls %v, defined after it", d.names, later.names)
		}
	}
}

// TestIDLess: id_less orders IDs as bytes do, with the server's own
// collation (byte order under the C and C.UTF-8 locales tests run in, so <)
// and with its byte-by-byte comparison (forced here: no alphabetical locale
// need be installed), for IDs differing anywhere, prefixes, case and the
// empty ID.
func TestIDLess(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ids := []string{"", "0", "01", "0193a1b2-0000-7000-8000-000000000000", "0193a1b2-0000-7000-8000-000000000001",
		"0193a1b2-0000-7000-8000-00000000000a", "0193a1b2-0001-7000-8000-000000000000", "0193a1b3-0000-7000-8000-000000000000",
		"0193A1b3-0000-7000-8000-000000000000", "0193a1b2-0000-7000-8000-00000000000", "ff", "Ff", "-", "a-b", "ab"}
	body := `
local out = {tostring(BYTE_COLLATION)}
for i = 1, #ARGV do
  for j = 1, #ARGV do out[#out + 1] = id_less(ARGV[i], ARGV[j]) and 1 or 0 end
end
return out`
	src := luaPrelude(body) + body
	const probe = "local BYTE_COLLATION = '-' < '0'"
	require.Contains(t, src, probe)
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	for _, collation := range []string{"server", "forced off"} {
		s := src
		if collation == "forced off" {
			s = strings.Replace(src, probe, "local BYTE_COLLATION = false and '-' < '0'", 1)
		}
		reply, err := rdb.Eval(context.Background(), s, nil, args...).Slice()
		require.NoError(t, err)
		if collation == "server" {
			t.Logf("the test server's collation is byte order: %v", reply[0])
		} else {
			require.Equal(t, "false", reply[0])
		}
		k := 1
		for _, a := range ids {
			for _, b := range ids {
				assert.Equal(t, boolInt(a < b), reply[k], "%s: id_less(%q, %q)", collation, a, b)
				k++
			}
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
