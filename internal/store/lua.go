package store

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/redis/go-redis/v9"
)

// luaFiles holds the Redis scripts, one file per operation in lua/, and the
// helpers they share in lua/lib/.
//
//go:embed lua/*.lua lua/lib/*.lua
var luaFiles embed.FS

// newScript returns the script lua/<name>, linked (see linkScript), under
// the shebang that says what Redis may run it on (see scriptFlags).
func newScript(name string) *redis.Script {
	return redis.NewScript(scriptFlags(name) + linkScript(name))
}

// readOnlyScripts are the scripts that write nothing.
// (get_thread, history_page and turn_events may convert an earlier layout
// as they read, so they count as writing.)
var readOnlyScripts = map[string]bool{"exists.lua": true, "get_file.lua": true, "list_threads.lua": true}

// scriptFlags is the shebang a script runs under (Redis 7). A script that
// writes is refused whole on a replica (READONLY) and when Redis is out of
// memory (OOM), before it runs: during a failover a client may still reach
// the old master come back as an empty replica, whose reads would answer
// "not found" for threads that exist, and a script cut off at its first
// write under maxmemory would keep the writes before it. Both refusals
// read as the store unavailable. A script that writes nothing says so and
// runs anywhere, so reads go on when Redis is full.
func scriptFlags(name string) string {
	if readOnlyScripts[name] {
		return "#!lua flags=no-writes\n"
	}
	return "#!lua\n"
}

// linkScript returns the script lua/<name> preceded by the helpers it calls
// (see luaPrelude). A line "--[[helpers]]" inside one of its top-level
// functions is replaced by the helpers that function calls from there to its
// end, and the script's top then carries none of them for it: they are made
// only when the function runs. Redis runs a script's every line on every
// call, so each definition a script carries but never calls costs every
// call a closure.
func linkScript(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic(fmt.Sprintf("store: script %s: %v", name, err))
	}
	lines := strings.SplitAfter(string(b), "\n")
	var top strings.Builder
	lazy := map[int]string{} // marker line → the code it links for
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != luaLinkMarker {
			top.WriteString(lines[i])
			continue
		}
		var body strings.Builder
		j := i + 1
		for ; j < len(lines) && strings.TrimRight(lines[j], "\n") != "end"; j++ {
			body.WriteString(lines[j])
		}
		if j == len(lines) {
			panic(fmt.Sprintf("store: script %s: %s outside a top-level function", name, luaLinkMarker))
		}
		lazy[i] = body.String()
		i = j - 1
	}
	var out strings.Builder
	out.WriteString(luaPrelude(top.String()))
	for i, line := range lines {
		if body, ok := lazy[i]; ok {
			out.WriteString(luaPrelude(body))
			continue
		}
		out.WriteString(line)
	}
	return out.String()
}

// luaLinkMarker marks where a script's function takes its helpers.
const luaLinkMarker = "--[[helpers]]"

// luaLib is every helper definition of lua/lib, in the order of the files'
// names and, within a file, of the definitions. A helper calls only helpers
// defined before it.
var luaLib = loadLuaLib()

func loadLuaLib() []luaDefinition {
	names, err := fs.Glob(luaFiles, "lua/lib/*.lua")
	if err != nil {
		panic(err)
	}
	var defs []luaDefinition
	for _, name := range names { // fs.Glob sorts them
		b, err := luaFiles.ReadFile(name)
		if err != nil {
			panic(err)
		}
		file, err := luaDefinitions(string(b))
		if err != nil {
			panic(fmt.Sprintf("store: %s: %v", path.Base(name), err))
		}
		defs = append(defs, file...)
	}
	return defs
}

// luaPrelude returns the helper definitions that code refers to, with those
// they refer to in turn, in their order in luaLib.
func luaPrelude(code string) string {
	used := make([]bool, len(luaLib))
	pending := []string{luaCode(code)}
	for len(pending) > 0 {
		src := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		for i, d := range luaLib {
			if !used[i] && d.referredBy(src) {
				used[i] = true
				pending = append(pending, d.code)
			}
		}
	}
	var b strings.Builder
	for i, d := range luaLib {
		if used[i] {
			b.WriteString(d.src)
		}
	}
	return b.String()
}

// luaDefinition is one top-level local of the helpers: the names it
// defines, its source with the comment above it, and its code alone.
type luaDefinition struct {
	names     []string
	src, code string
}

func (d luaDefinition) referredBy(src string) bool {
	for _, name := range d.names {
		if luaRefers(src, name) {
			return true
		}
	}
	return false
}

// luaDefinitions splits a helper file into its top-level definitions. Each
// begins at a line "local …" and takes the comment lines right above it; it
// ends where the next definition or a comment block begins. A comment block
// followed by a blank line belongs to no definition (a file's header, say);
// any other code outside a definition is an error.
func luaDefinitions(src string) ([]luaDefinition, error) {
	var defs []luaDefinition
	var comment strings.Builder
	inDef := false
	for line := range strings.Lines(src) {
		if !strings.HasSuffix(line, "\n") {
			line += "\n"
		}
		switch {
		case strings.HasPrefix(line, "--"):
			comment.WriteString(line)
			inDef = false
		case strings.TrimSpace(line) == "":
			comment.Reset()
		case strings.HasPrefix(line, "local "):
			defs = append(defs, luaDefinition{names: luaLocalNames(line), src: comment.String()})
			comment.Reset()
			inDef = true
			fallthrough
		default:
			if !inDef {
				return nil, fmt.Errorf("code outside a definition: %q", line)
			}
			d := &defs[len(defs)-1]
			d.src += line
			d.code += line
		}
	}
	return defs, nil
}

// luaCode is src without its comment lines, which name helpers that the
// code need not call.
func luaCode(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// luaLocalNames returns the names a line "local function f(" or
// "local a, b = …" defines.
func luaLocalNames(line string) []string {
	rest := strings.TrimPrefix(line, "local ")
	if fn, ok := strings.CutPrefix(rest, "function "); ok {
		name, _, _ := strings.Cut(fn, "(")
		return []string{strings.TrimSpace(name)}
	}
	lhs, _, _ := strings.Cut(rest, "=")
	var names []string
	for n := range strings.SplitSeq(lhs, ",") {
		names = append(names, strings.TrimSpace(n))
	}
	return names
}

// luaRefers reports whether src mentions name as a whole word.
func luaRefers(src, name string) bool {
	for i := 0; ; {
		j := strings.Index(src[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !luaWordByte(src[start-1])) && (end == len(src) || !luaWordByte(src[end])) {
			return true
		}
		i = end
	}
}

func luaWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
