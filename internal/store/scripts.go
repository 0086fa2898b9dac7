package store

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// Every Redis operation is one of these Lua scripts: Redis runs a script
// without interleaving any other command, so each operation is atomic, and
// because a script names only one thread's keys (all in one hash slot) it
// runs on one Cluster node. Scripts answer with an array whose first element
// is a status word; "OK" is followed by the operation's data.
//
// Every script that writes is idempotent for a repeated call with the same
// arguments: go-redis re-sends a command whose reply did not arrive in time
// (ReadTimeout, MaxRetries), although the first send may have run. A begin's
// lock token and a create's or commit's call ID are minted once per store
// call, so a re-sent script carries the same one and recognises the state
// its first run left: it then answers as the first run did instead of BUSY,
// CONSUMED, LOCKLOST or EXISTS, which would report a failure for work that
// was done. Another call never carries that token or ID, so it is refused as
// before.

// luaHelpers is prepended to every script.
const luaHelpers = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- HMGET and HDEL take their fields as arguments; Lua's unpack is bounded by
-- its stack, so long lists go in chunks.
local function hmget_all(key, fields)
  local out = {}
  local i = 1
  while i <= #fields do
    local j = math.min(i + 499, #fields)
    local part = redis.call('HMGET', key, unpack(fields, i, j))
    for k = 1, #part do out[#out + 1] = part[k] end
    i = j + 1
  end
  return out
end

local function hdel_all(key, fields)
  local i = 1
  while i <= #fields do
    local j = math.min(i + 499, #fields)
    redis.call('HDEL', key, unpack(fields, i, j))
    i = j + 1
  end
end

-- owned_thread returns the thread record's fields (owner, processor,
-- created, updated, title, metadata, preview; absent ones false), or nil when
-- the thread is missing or principal does not own it.
local function owned_thread(key, principal)
  local t = redis.call('HMGET', key, 'owner', 'processor', 'created', 'updated', 'title', 'metadata', 'preview')
  if not t[1] or t[1] ~= principal then return nil end
  return t
end

-- The lock's value is "<token>|<claimed elicitation id>|<turn id>|<started
-- ms>|<request fingerprint>|<length of the first event>|<the turn's first
-- event as a log record><idempotency field>": the claim is empty for a
-- plain turn, so a claim lives and dies with its lock, and the rest say
-- which turn runs and how it began. The first event and the idempotency
-- field come last, delimited by length, because they may hold '|'. A lock
-- written before the first event was kept in it has the idempotency field
-- where the length is (never a number: it holds ':').
local function lock_parts(v)
  -- One match for the current format: each call into Lua's string library
  -- costs a script more than the matching does.
  local token, claim, turn, started, fingerprint, n, at =
    string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(%d+)|()')
  if token then
    n = tonumber(n)
    return token, claim, turn, started, fingerprint, string.sub(v, at + n), string.sub(v, at, at + n - 1)
  end
  local parts = {}
  local start = 1
  for i = 1, 6 do
    local sep = string.find(v, '|', start, true)
    if sep then
      parts[i] = string.sub(v, start, sep - 1)
      start = sep + 1
    else
      parts[i] = string.sub(v, start)
      start = #v + 1
    end
  end
  local n = tonumber(parts[6])
  if not n then
    return parts[1], parts[2], parts[3], parts[4], parts[5], parts[6] .. (start <= #v and '|' .. string.sub(v, start) or ''), ''
  end
  return parts[1], parts[2], parts[3], parts[4], parts[5], string.sub(v, start + n), string.sub(v, start, start + n - 1)
end

-- lock_token is a lock's token alone, all a commit, release or renewal
-- reads of it: every capture is a string Lua makes, and hashes, byte by
-- byte.
local function lock_token(v) return string.match(v, '^[^|]*') end

-- lock_value is a lock's value; first is the turn's first event's record
-- with its length before it, "<length>|<record>" (see lockRecord).
local function lock_value(token, claim, turn, started, fingerprint, idem, first)
  return token .. '|' .. claim .. '|' .. turn .. '|' .. started .. '|' .. fingerprint .. '|' .. first .. idem
end

-- thread_reply is a thread record followed by its running turn (ID and
-- start, or false, false): turn and started when given, else read from the
-- lock.
local function thread_reply(out, t, lockkey, turn, started)
  for i = 1, 7 do out[#out + 1] = t[i] end
  if not turn then
    local held = redis.call('GET', lockkey)
    turn, started = false, false
    if held then
      local _, _, id, ms = lock_parts(held)
      if id ~= '' then turn, started = id, ms end
    end
  end
  out[#out + 1] = turn
  out[#out + 1] = started
  return out
end

-- A turn's events are kept as records, "<id> <name> <data length>\n<data>"
-- each, written by chatd (appendRecord) and read back by it (parseLog): Lua
-- passes them along whole, since every call into Lua's string library costs
-- a script more than copying the bytes.
--
-- A turn's log is a stream while it runs and something needs more than its
-- first event (an append of streamed events, or a reader waiting for the
-- rest), so that readers can wait on it with XREAD; until then the first
-- event's record lives in the lock. A turn that ends with no stream (one
-- answered as one body that no one followed) writes its whole log at once,
-- as one string of records: a SET costs Redis a fraction of creating a
-- stream.

-- add_events appends a batch of events to a turn's stream: ARGV[first] is
-- the batch's last event ID and ARGV[first + 1] its records, kept as one
-- entry "0-<last id>" with the field r. Entry IDs only grow, so a re-sent
-- batch is refused by XADD and skipped; readers skip any event they already
-- passed.
local function add_events(key, first)
  if ARGV[first + 1] == '' then return end
  redis.pcall('XADD', key, '0-' .. ARGV[first], 'r', ARGV[first + 1])
end

-- open_log makes turn's log at logkey a stream if it is not one yet and the
-- turn still holds the lock, starting it with the turn's first event and
-- making it live extra_ms past the lock. It returns the log's type: stream,
-- string (the turn ended) or none (no such turn, or it ended long ago).
local function open_log(logkey, lockkey, turn, extra_ms)
  local kind = redis.call('TYPE', logkey)['ok']
  if kind ~= 'none' then return kind end
  local held = redis.call('GET', lockkey)
  if not held then return 'none' end
  local _, _, id, _, _, _, first = lock_parts(held)
  if id ~= turn or first == '' then return 'none' end
  redis.call('XADD', logkey, '0-' .. string.sub(first, 1, string.find(first, ' ', 1, true) - 1), 'r', first)
  redis.call('PEXPIRE', logkey, redis.call('PTTL', lockkey) + extra_ms)
  return 'stream'
end

-- close_log ends a turn's log with its last events and makes the log live
-- ttl_ms. ARGV[first] is the last event's ID (0: there is none) and
-- ARGV[first + 1] the whole log as records, the first event's then the last
-- events'. A log that is still only its first event, kept in the lock, is
-- written whole as one string, just as chatd sent it: joined in Lua, every
-- byte would be hashed again, and an APPEND would leave the log holding twice
-- its size for its whole life (Redis grows an appended string to double). A
-- log that is a stream takes the records as its last entry, the first
-- event's included: readers skip an event they already have, and cutting it
-- off would hash the rest again.
local function close_log(logkey, first, ttl_ms)
  if ARGV[first] == '0' then
    -- A turn that ends with no last event keeps no log: its readers learn
    -- it is gone.
    redis.call('DEL', logkey)
    return
  end
  if redis.call('SET', logkey, ARGV[first + 1], 'PX', ttl_ms, 'NX') then return end
  add_events(logkey, first)
  redis.call('PEXPIRE', logkey, ttl_ms)
end

-- window_size is the history window for a thread bound to processor:
-- ARGV[first] is the default, followed by processor name and window pairs.
local function window_size(processor, first)
  local n = tonumber(ARGV[first])
  for i = first + 1, #ARGV - 1, 2 do
    if ARGV[i] == processor then n = tonumber(ARGV[i + 1]) end
  end
  return n
end

local function append_all(out, items)
  for i = 1, #items do out[#out + 1] = items[i] end
  return out
end
`

// newScript prepends to body the helpers it uses (see luaPrelude), then
// lazy: local functions body calls that define their helpers themselves
// (see lazyLua).
func newScript(body string, lazy ...string) *redis.Script {
	return redis.NewScript(luaPrelude(body) + strings.Join(lazy, "") + body)
}

// lazyLua is a script's local function name(params) returning call, with
// the helpers call uses defined inside it, so that they are made only when
// it runs. A begin reads history only for a thread whose processor reads a
// window, and most read none: the history code's dozen helpers, made on
// every run at the top of the script, cost such a begin 15-20k
// instructions of redis-server's for nothing.
func lazyLua(name, params, call string) string {
	ret := "return " + call + "\n"
	return "local function " + name + "(" + params + ")\n" + luaPrelude(ret) + ret + "end\n"
}

// luaPrelude returns the definitions of luaHelpers and historyLua that body
// refers to, with those they refer to in turn, in their order. Redis runs a
// script's every line on every call, so each definition a script carries but
// never calls costs every call a closure.
func luaPrelude(body string) string {
	defs := luaDefinitions(luaHelpers + historyLua)
	used := make([]bool, len(defs))
	pending := []string{body}
	for len(pending) > 0 {
		src := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		for i, d := range defs {
			if used[i] {
				continue
			}
			for _, name := range d.names {
				if luaRefers(src, name) {
					used[i] = true
					pending = append(pending, d.src)
					break
				}
			}
		}
	}
	var b strings.Builder
	for i, d := range defs {
		if used[i] {
			b.WriteString(d.src)
		}
	}
	return b.String()
}

// luaDefinition is one top-level local of the helpers: the names it
// defines and its source, with the comment above it.
type luaDefinition struct {
	names []string
	src   string
}

// luaDefinitions splits Lua source into its top-level definitions: each
// begins at a line "local …" at the start of a line, and the comment lines
// before it belong to it.
func luaDefinitions(src string) []luaDefinition {
	var defs []luaDefinition
	var cur, comment strings.Builder
	var names []string
	flush := func() {
		if len(names) > 0 {
			defs = append(defs, luaDefinition{names: names, src: cur.String()})
		}
		cur.Reset()
		names = nil
	}
	for line := range strings.Lines(src) {
		switch {
		case strings.HasPrefix(line, "--"):
			comment.WriteString(line)
			continue
		case strings.HasPrefix(line, "local "):
			flush()
			cur.WriteString(comment.String())
			names = luaLocalNames(line)
		default:
			cur.WriteString(comment.String())
		}
		comment.Reset()
		cur.WriteString(line)
	}
	flush()
	return defs
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

// createScript: KEYS thread; ARGV owner, processor, created, updated, ttl_ms,
// call id. Returns EXISTS | OK. A thread holding this call's ID was written
// by a first run of this call whose reply was lost.
var createScript = newScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'create_call') == ARGV[6] then return {'OK'} end
  return {'EXISTS'}
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'processor', ARGV[2], 'created', ARGV[3], 'updated', ARGV[4], 'seq', 0,
  'create_call', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {'OK'}
`)

// getScript: KEYS thread, pending, lock; ARGV principal.
// Returns OK + thread (9 fields, see thread_reply) + pending JSON or nil.
var getScript = newScript(`
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
local out = thread_reply({'OK'}, t, KEYS[3])
out[#out + 1] = redis.call('HGET', KEYS[2], 'data')
return out
`)

// deleteScript: KEYS every key of the thread, the thread hash first;
// ARGV principal.
var deleteScript = newScript(`
if not owned_thread(KEYS[1], ARGV[1]) then return {'NOTFOUND'} end
redis.call('DEL', unpack(KEYS))
return {'OK'}
`)

// beginTurnScript: KEYS thread, lock, pending, msgs, msgdata, idem, idemexp,
// history; ARGV 1 principal, 2 idempotency field (empty for none), 3 token,
// 4 lock_ttl_ms, 5 turn id, 6 fingerprint, 7 the turn's first event as a log
// record after its length, "<length>|<record>" ("0|" for none; kept in the
// lock), 8 the time it starts (Unix ms, the instance's clock, as every other
// time chatd records), then the window: its default, then processor and
// window pairs.
// Returns NOTFOUND | REPLAY + thread + record | BUSY | RUNNING + turn id +
// fingerprint | PENDING + pending JSON | OK + thread + window messages.
// A lock held by ARGV token was taken by a first run of this call: nothing
// can have changed under it, so the answer is the first run's again.
var beginTurnScript = newScript(`
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
if ARGV[2] ~= '' then
  local rec = redis.call('HGET', KEYS[6], ARGV[2])
  local exp = redis.call('ZSCORE', KEYS[7], ARGV[2])
  if rec and exp and tonumber(exp) > now_ms() then
    local out = thread_reply({'REPLAY'}, t, KEYS[2])
    out[#out + 1] = rec
    return out
  end
end
local wfirst = 9
local function ok(turn, started)
  local out = thread_reply({'OK'}, t, KEYS[2], turn, started)
  local n = window_size(t[2], wfirst)
  if n <= 0 then return out end
  return append_all(out, read_window(n))
end
local held = redis.call('GET', KEYS[2])
if held then
  local token, claim, turn, _, fingerprint, idem = lock_parts(held)
  if token == ARGV[3] and claim == '' then return ok() end
  if ARGV[2] ~= '' and idem == ARGV[2] then return {'RUNNING', turn, fingerprint} end
  return {'BUSY'}
end
local p = redis.call('HGET', KEYS[3], 'data')
if p then return {'PENDING', p} end
redis.call('SET', KEYS[2], lock_value(ARGV[3], '', ARGV[5], ARGV[8], ARGV[6], ARGV[2], ARGV[7]), 'PX', ARGV[4])
if ARGV[5] == '' then return ok(false, false) end
return ok(ARGV[5], ARGV[8])
`, lazyLua("read_window", "n", "hist_window(KEYS[1], KEYS[4], KEYS[5], KEYS[8], n)"))

// beginResumeScript: KEYS thread, lock, pending, msgs, msgdata, elicitations,
// history; ARGV 1 principal, 2 elicitation id, 3 token, 4 lock_ttl_ms,
// 5 turn id, 6 the turn's first event as a log record after its length
// ("0|" for none), 7 the time it starts (Unix ms), then the window: its
// default, then processor and window pairs.
// Returns NOTFOUND | BUSY (another turn, or another answer's live claim)
// | CONSUMED | EXPIRED [+ 'first'] | UNKNOWN
// | OK + thread + pending JSON + window messages. A claim on this
// elicitation held by ARGV token was taken by a first run of this call, which
// answered OK; so does the repeat.
var beginResumeScript = newScript(`
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
local id = ARGV[2]
local wfirst = 8
local p = redis.call('HMGET', KEYS[3], 'id', 'data')
if p[1] and p[1] == id then
  local held = redis.call('GET', KEYS[2])
  if held then
    local token, claim = lock_parts(held)
    -- A live claim is an answer in progress, not a consumed elicitation:
    -- if its instance dies, the claim lapses with the lock's lease.
    if claim ~= id or token ~= ARGV[3] then return {'BUSY'} end
  else
    redis.call('SET', KEYS[2], lock_value(ARGV[3], id, ARGV[5], ARGV[7], '', '', ARGV[6]), 'PX', ARGV[4])
  end
  local out = thread_reply({'OK'}, t, KEYS[2])
  out[#out + 1] = p[2]
  local n = window_size(t[2], wfirst)
  if n <= 0 then return out end
  return append_all(out, read_window(n))
end
local state = redis.call('HGET', KEYS[6], id)
if state == 'consumed' then return {'CONSUMED'} end
if state == 'issued' then
  -- The first resume to find the pending state gone records the expiry, so
  -- it is reported as discovered once.
  redis.call('HSET', KEYS[6], id, 'expired')
  return {'EXPIRED', 'first'}
end
if state == 'expired' then return {'EXPIRED'} end
return {'UNKNOWN'}
`, lazyLua("read_window", "n", "hist_window(KEYS[1], KEYS[4], KEYS[5], KEYS[7], n)"))

// commitScript: KEYS thread, lock, pending, msgs, msgdata, elicitations,
// idem, idemexp, turn events, history; ARGV 1 token, 2 updated, 3 history_max,
// 4 thread_ttl_ms, 5 consumed id, 6 pause id, 7 pause JSON, 8 pause
// expires_at_ms, 9 idempotency field, 10 idempotency record,
// 11 idempotency_ttl_ms, 12 call id, 13 preview, 14 events_ttl_ms (0: no
// turn log), 15 message count, then id, JSON for each message, then
// history_max_bytes, then the last event's ID and the log's records (see
// close_log).
// Returns NOTFOUND | LOCKLOST | OK.
// Every commit records its call ID as the thread's last_commit: when ARGV
// token no longer holds the lock because a first run of this call committed
// and released it, the repeat answers OK and writes nothing. A later commit
// overwrites last_commit, so a repeat that arrives only after another turn
// has begun and committed answers LOCKLOST; go-redis re-sends after a short
// backoff, well before a whole turn can run in between. A second CommitTurn
// call with the same token has a new call ID and gets LOCKLOST, so its
// messages are never reported kept while dropped.
var commitScript = newScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOTFOUND'} end
local held = redis.call('GET', KEYS[2])
if not held or lock_token(held) ~= ARGV[1] then
  if redis.call('HGET', KEYS[1], 'last_commit') == ARGV[12] then return {'OK'} end
  return {'LOCKLOST'}
end

local n = tonumber(ARGV[15])
local fields = {'updated', ARGV[2], 'last_commit', ARGV[12]}
if n > 0 then
  local ids, datas = {}, {}
  for i = 0, n - 1 do
    ids[#ids + 1], datas[#datas + 1] = ARGV[16 + 2 * i], ARGV[17 + 2 * i]
  end
  hist_append(KEYS[1], KEYS[4], KEYS[5], KEYS[10], ids, datas, tonumber(ARGV[3]), tonumber(ARGV[16 + 2 * n]), fields)
else
  redis.call('HSET', KEYS[1], unpack(fields))
end
if ARGV[5] ~= '' then
  if redis.call('HGET', KEYS[3], 'id') == ARGV[5] then redis.call('DEL', KEYS[3]) end
  redis.call('HSET', KEYS[6], ARGV[5], 'consumed')
end
if ARGV[6] ~= '' then
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'id', ARGV[6], 'data', ARGV[7])
  -- The pending state never outlives its thread.
  redis.call('PEXPIREAT', KEYS[3], math.min(tonumber(ARGV[8]), now_ms() + tonumber(ARGV[4])))
  redis.call('HSET', KEYS[6], ARGV[6], 'issued')
end
if ARGV[9] ~= '' then
  -- Idempotency records are swept and their keys' lives extended when one
  -- is added: a record only matters for IdempotencyTTL after it is written,
  -- and a thread that stops sending keys keeps what it has until then at
  -- most, so its other turns need not touch them.
  local now = now_ms()
  local expired = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', now)
  if #expired > 0 then
    hdel_all(KEYS[7], expired)
    redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
  end
  redis.call('HSET', KEYS[7], ARGV[9], ARGV[10])
  redis.call('ZADD', KEYS[8], now + tonumber(ARGV[11]), ARGV[9])
  local keep = math.max(tonumber(ARGV[4]), tonumber(ARGV[11]))
  redis.call('PEXPIRE', KEYS[7], keep)
  redis.call('PEXPIRE', KEYS[8], keep)
end
if ARGV[13] ~= '' then redis.call('HSETNX', KEYS[1], 'preview', ARGV[13]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[10], ARGV[4])
redis.call('PEXPIRE', KEYS[6], ARGV[4])
if ARGV[14] ~= '0' then close_log(KEYS[9], 17 + 2 * n, ARGV[14]) end
redis.call('DEL', KEYS[2])
return {'OK'}
`)

// releaseScript: KEYS lock, turn events; ARGV 1 token, 2 events_ttl_ms (0:
// no turn log), 3 the last event's ID, 4 the log's records (see close_log).
// Returns LOCKLOST | OK.
// A repeat after a successful first run answers LOCKLOST: the state is the
// same (the lock is gone, and a lock another turn took since is left alone),
// and callers ignore a release's error, so no record of releases is kept.
var releaseScript = newScript(`
local held = redis.call('GET', KEYS[1])
if not held then return {'LOCKLOST'} end
if lock_token(held) ~= ARGV[1] then return {'LOCKLOST'} end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= '0' then close_log(KEYS[2], 3, ARGV[2]) end
return {'OK'}
`)

// appendEventsScript: KEYS turn events, lock; ARGV 1 turn id, 2
// events_ttl_ms, 3 the last event's ID, 4 the events' records. The log
// of a turn that no longer runs takes nothing.
var appendEventsScript = newScript(`
if open_log(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])) == 'stream' then add_events(KEYS[1], 3) end
return {'OK'}
`)

// turnEventsScript: KEYS thread, turn events, lock; ARGV 1 principal,
// 2 after, 3 turn id, 4 events_ttl_ms.
// Returns NOTFOUND | NOTURN | OK + the log's kind + strings of records:
// for a string log, the whole log (its turn has ended); for a stream, the
// last entry's records (whose last event says whether the turn has ended)
// and then those of every entry holding events after ARGV after. Reading a
// running turn's log makes it a stream, so that the reader can wait for
// what follows.
var turnEventsScript = newScript(`
if not owned_thread(KEYS[1], ARGV[1]) then return {'NOTFOUND'} end
local kind = open_log(KEYS[2], KEYS[3], ARGV[3], tonumber(ARGV[4]))
if kind == 'none' then return {'NOTURN'} end
if kind == 'string' then return {'OK', kind, redis.call('GET', KEYS[2])} end
-- entry_records is a stream entry's records; an entry written before events
-- were kept as records has a field "<id> <name>" per event, with its data.
local function entry_records(f)
  if f[1] == 'r' then return f[2] end
  local out = {}
  for i = 1, #f - 1, 2 do out[#out + 1] = f[i] .. ' ' .. #f[i + 1] .. '\n' .. f[i + 1] end
  return table.concat(out)
end
local out = {'OK', kind, ''}
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #top > 0 then out[3] = entry_records(top[1][2]) end
for _, e in ipairs(redis.call('XRANGE', KEYS[2], '(0-' .. ARGV[2], '+')) do
  out[#out + 1] = entry_records(e[2])
end
return out
`)

// updateThreadScript: KEYS thread, lock; ARGV 1 principal, 2 metadata as
// read (the CAS guard), 3 new metadata, 4 set title (0|1), 5 title (empty
// with 6 = 0 clears it), 6 title present (0|1), 7 updated, 8 thread_ttl_ms.
// Returns NOTFOUND | CHANGED (metadata moved since it was read) | OK + thread.
var updateThreadScript = newScript(`
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
if (t[6] or '') ~= ARGV[2] then return {'CHANGED'} end
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], 'metadata') else redis.call('HSET', KEYS[1], 'metadata', ARGV[3]) end
if ARGV[4] == '1' then
  if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'title', ARGV[5]) else redis.call('HDEL', KEYS[1], 'title') end
end
redis.call('HSET', KEYS[1], 'updated', ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return thread_reply({'OK'}, owned_thread(KEYS[1], ARGV[1]), KEYS[2])
`)

// listThreadsScript: KEYS the principal's thread index; ARGV 1 count,
// 2 cursor score (empty for the first page), 3 cursor thread id.
// Returns OK, then thread id, score for each of up to count threads after
// the cursor, most recently updated first (ties by descending id, the
// order of ZREVRANGEBYSCORE).
var listThreadsScript = newScript(`
local n = tonumber(ARGV[1])
local items
if ARGV[2] == '' then
  items = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, n)
else
  local skip = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[2])) do
    if id >= ARGV[3] then skip = skip + 1 end
  end
  items = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[2], '-inf', 'WITHSCORES', 'LIMIT', skip, n)
end
return append_all({'OK'}, items)
`)

// historyScript: KEYS thread, msgs, msgdata, history; ARGV principal, limit,
// before. Returns NOTFOUND | BADCURSOR | OK, more (0|1), page messages
// oldest first.
var historyScript = newScript(`
if not owned_thread(KEYS[1], ARGV[1]) then return {'NOTFOUND'} end
local more, page = hist_page(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[2]), ARGV[3])
if not more then return {'BADCURSOR'} end
return append_all({'OK', more}, page)
`)

// renewScript: KEYS lock, turn events; ARGV 1 token, 2 lease_ms,
// 3 events_ttl_ms. Returns LOCKLOST | OK.
// The running turn's lease is extended, and its event log with it, only
// while the token still holds the lock: a lease that lapsed and was taken
// over stays lost.
var renewScript = newScript(`
local held = redis.call('GET', KEYS[1])
if not held then return {'LOCKLOST'} end
if lock_token(held) ~= ARGV[1] then return {'LOCKLOST'} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[2]) + tonumber(ARGV[3]))
end
return {'OK'}
`)

// indexNewScript: KEYS a principal's thread index; ARGV 1 max threads,
// 2 thread id, 3 score (updated, ms), 4 ttl_ms. Lists the thread when the
// index holds fewer than max (or holds it already: a re-sent call) and
// returns OK; else returns FULL + every listed thread ID and its score (some
// may be dead: the caller checks them). Counting and listing in one script
// is what keeps creates that race at the quota from all passing.
var indexNewScript = newScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
    return append_all({'FULL'}, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'))
  end
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'OK'}
`)

// existsScript: KEYS a thread hash. Returns 1 when it exists, else 0.
var existsScript = newScript(`return redis.call('EXISTS', KEYS[1])`)

// unindexScript: KEYS a principal's thread index; ARGV thread IDs to drop.
var unindexScript = newScript(`
redis.call('ZREM', KEYS[1], unpack(ARGV))
return {'OK'}
`)
