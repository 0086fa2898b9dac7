package store

import (
	"context"
	"io/fs"
	"path"
	"regexp"
	"strconv"
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
	at := strings.Index(begin, "local function read_branch(n)\n")
	require.GreaterOrEqual(t, at, 0, "begin_turn.lua defines read_branch")
	const call = "return leaf, head, recs\nend\n"
	end := strings.Index(begin, call)
	require.Greater(t, end, at, "read_branch ends with its call")
	lazy := begin[at : end+len(call)]
	assert.NotContains(t, lazy, luaLinkMarker, "the marker is replaced")
	for _, name := range []string{"tree_window", "tree_head_id", "hist_open", "hist_range", "seal"} {
		assert.True(t, defines(lazy, name), "the lazy function defines %s", name)
		assert.False(t, defines(begin[:at], name), "the script's top does not define %s", name)
	}
	assert.Empty(t, luaPrelude("return read_branch(5)"), "read_branch is no helper of the top")
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

// TestScriptArgs: every script names its keys and arguments once, at its
// top, in order from 1, and never by position elsewhere; its call type is
// the one that runs it and passes as many as it names (with the lists that
// follow them empty).
func TestScriptArgs(t *testing.T) {
	k := keysFor("t")
	tests := []struct {
		file string
		call scriptCall
		// moreKeys: the script takes keys after those it names.
		moreKeys bool
	}{
		{"create_thread.lua", createThreadCall{k: k}, false},
		{"get_thread.lua", getThreadCall{k: k}, false},
		{"delete_thread.lua", deleteThreadCall{k: k}, true},
		{"update_thread.lua", updateThreadCall{k: k}, false},
		{"list_threads.lua", listThreadsCall{}, false},
		{"index_new.lua", indexNewCall{}, false},
		{"exists.lua", existsCall{k: k}, false},
		{"unindex.lua", unindexCall{}, false},
		{"begin_turn.lua", beginTurnCall{k: k}, false},
		{"begin_resume.lua", beginResumeCall{k: k}, false},
		{"commit_turn.lua", commitTurnCall{k: k}, false},
		{"release_turn.lua", releaseTurnCall{lockKey: k.lock}, false},
		{"renew_lock.lua", renewLockCall{lockKey: k.lock}, false},
		{"history_page.lua", historyPageCall{k: k}, false},
		{"append_events.lua", appendEventsCall{lockKey: k.lock}, false},
		{"turn_events.lua", turnEventsCall{k: k}, false},
		{"put_file.lua", putFileCall{threadID: "t"}, false},
		{"get_file.lua", getFileCall{threadID: "t"}, false},
		{"delete_file.lua", deleteFileCall{threadID: "t"}, false},
		{"reserve_file.lua", reserveFileCall{}, false},
		{"unreserve_files.lua", unreserveFilesCall{}, false},
	}
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	require.NoError(t, err)
	require.Len(t, tests, len(files), "every script is listed here")
	named := regexp.MustCompile(`(?m)^local \w+ = (KEYS|ARGV)\[(\d+)\]`)
	positional := regexp.MustCompile(`(KEYS|ARGV)\[\d+\]`)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := luaFiles.ReadFile(path.Join("lua", tt.file))
			require.NoError(t, err)
			count := map[string]int{}
			for _, m := range named.FindAllStringSubmatch(string(src), -1) {
				count[m[1]]++
				assert.Equal(t, strconv.Itoa(count[m[1]]), m[2], "%s named in order", m[0])
			}
			assert.Len(t, positional.FindAllString(luaCode(string(src)), -1), count["KEYS"]+count["ARGV"],
				"keys and arguments are used by name only")
			if tt.moreKeys {
				assert.GreaterOrEqual(t, len(tt.call.keys()), count["KEYS"])
			} else {
				assert.Len(t, tt.call.keys(), count["KEYS"])
			}
			assert.Len(t, tt.call.args(), count["ARGV"])
			assert.Equal(t, newScript(tt.file).Hash(), tt.call.script().Hash(), "the call runs its script")
		})
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
