package store

import "github.com/redis/go-redis/v9"

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

-- owned_thread returns owner, processor, created, updated, or nil when the
-- thread is missing or principal does not own it.
local function owned_thread(key, principal)
  local t = redis.call('HMGET', key, 'owner', 'processor', 'created', 'updated')
  if not t[1] or t[1] ~= principal then return nil end
  return t
end

-- The lock's value is "<token>|<claimed elicitation id>", the id empty for
-- a plain turn, so a claim lives and dies with its lock.
local function lock_parts(v)
  local sep = string.find(v, '|', 1, true)
  return string.sub(v, 1, sep - 1), string.sub(v, sep + 1)
end

-- window returns the newest n messages' JSON, oldest first.
local function window(msgs, msgdata, n)
  if n <= 0 then return {} end
  local ids = redis.call('ZRANGE', msgs, -n, -1)
  if #ids == 0 then return {} end
  return hmget_all(msgdata, ids)
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

func newScript(body string) *redis.Script { return redis.NewScript(luaHelpers + body) }

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

// getScript: KEYS thread, pending; ARGV principal.
// Returns OK, owner, processor, created, updated, pending JSON or nil.
var getScript = newScript(`
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
return {'OK', t[1], t[2], t[3], t[4], redis.call('HGET', KEYS[2], 'data')}
`)

// deleteScript: KEYS every key of the thread, the thread hash first;
// ARGV principal.
var deleteScript = newScript(`
if not owned_thread(KEYS[1], ARGV[1]) then return {'NOTFOUND'} end
redis.call('DEL', unpack(KEYS))
return {'OK'}
`)

// beginTurnScript: KEYS thread, lock, pending, msgs, msgdata, idem, idemexp;
// ARGV principal, idempotency field (empty for none), token, lock_ttl_ms,
// window, then processor and window pairs.
// Returns NOTFOUND | REPLAY + thread + record | BUSY | PENDING + pending JSON
// | OK + thread + window messages. A lock held by ARGV token was taken by a
// first run of this call: nothing can have changed under it, so the answer
// is the first run's again.
var beginTurnScript = newScript(`
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
if ARGV[2] ~= '' then
  local rec = redis.call('HGET', KEYS[6], ARGV[2])
  local exp = redis.call('ZSCORE', KEYS[7], ARGV[2])
  if rec and exp and tonumber(exp) > now_ms() then
    return {'REPLAY', t[1], t[2], t[3], t[4], rec}
  end
end
local function ok()
  return append_all({'OK', t[1], t[2], t[3], t[4]}, window(KEYS[4], KEYS[5], window_size(t[2], 5)))
end
local held = redis.call('GET', KEYS[2])
if held then
  local token, claim = lock_parts(held)
  if token == ARGV[3] and claim == '' then return ok() end
  return {'BUSY'}
end
local p = redis.call('HGET', KEYS[3], 'data')
if p then return {'PENDING', p} end
redis.call('SET', KEYS[2], ARGV[3] .. '|', 'PX', ARGV[4])
return ok()
`)

// beginResumeScript: KEYS thread, lock, pending, msgs, msgdata, elicitations;
// ARGV principal, elicitation id, token, lock_ttl_ms, window, then
// processor and window pairs.
// Returns NOTFOUND | BUSY | CONSUMED | EXPIRED [+ 'first'] | UNKNOWN
// | OK + thread + pending JSON + window messages. A claim on this
// elicitation held by ARGV token was taken by a first run of this call, which
// answered OK; so does the repeat.
var beginResumeScript = newScript(`
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
local id = ARGV[2]
local p = redis.call('HMGET', KEYS[3], 'id', 'data')
if p[1] and p[1] == id then
  local held = redis.call('GET', KEYS[2])
  if held then
    local token, claim = lock_parts(held)
    if claim == id and token ~= ARGV[3] then return {'CONSUMED'} end
    if claim ~= id then return {'BUSY'} end
  else
    redis.call('SET', KEYS[2], ARGV[3] .. '|' .. id, 'PX', ARGV[4])
  end
  return append_all({'OK', t[1], t[2], t[3], t[4], p[2]}, window(KEYS[4], KEYS[5], window_size(t[2], 5)))
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
`)

// commitScript: KEYS thread, lock, pending, msgs, msgdata, elicitations,
// idem, idemexp; ARGV 1 token, 2 updated, 3 history_max, 4 thread_ttl_ms,
// 5 consumed id, 6 pause id, 7 pause JSON, 8 pause expires_at_ms,
// 9 idempotency field, 10 idempotency record, 11 idempotency_ttl_ms,
// 12 call id, 13 message count, then id, JSON for each message, and last
// history_max_bytes.
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
local token = held and lock_parts(held)
if token ~= ARGV[1] then
  if redis.call('HGET', KEYS[1], 'last_commit') == ARGV[12] then return {'OK'} end
  return {'LOCKLOST'}
end

local now = now_ms()
local ttl = tonumber(ARGV[4])
local n = tonumber(ARGV[13])
if n > 0 then
  -- The thread's 'bytes' is the size of its history's JSON; a thread
  -- written before it was kept has it counted once here.
  local bytes = tonumber(redis.call('HGET', KEYS[1], 'bytes'))
  if not bytes then
    bytes = 0
    for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
      bytes = bytes + redis.call('HSTRLEN', KEYS[5], id)
    end
  end
  -- History order is commit order: scores come from a per-thread counter.
  local seq = redis.call('HINCRBY', KEYS[1], 'seq', n) - n
  for i = 0, n - 1 do
    local id, data = ARGV[14 + 2 * i], ARGV[15 + 2 * i]
    redis.call('ZADD', KEYS[4], 'NX', seq + i + 1, id)
    bytes = bytes - redis.call('HSTRLEN', KEYS[5], id) + #data
    redis.call('HSET', KEYS[5], id, data)
  end
  -- The oldest messages go beyond history_max, then until the rest fits in
  -- history_max_bytes, the newest message being kept whatever its size.
  local count = redis.call('ZCARD', KEYS[4])
  local drop = math.max(count - tonumber(ARGV[3]), 0)
  local maxbytes = tonumber(ARGV[#ARGV])
  local ids = {}
  if drop > 0 then
    ids = redis.call('ZRANGE', KEYS[4], 0, drop - 1)
    for _, id in ipairs(ids) do bytes = bytes - redis.call('HSTRLEN', KEYS[5], id) end
  end
  while bytes > maxbytes and drop < count - 1 do
    -- The next oldest, a slice at a time rather than the whole history.
    local more = redis.call('ZRANGE', KEYS[4], drop, math.min(drop + 63, count - 2))
    for _, id in ipairs(more) do
      if bytes <= maxbytes then break end
      bytes = bytes - redis.call('HSTRLEN', KEYS[5], id)
      ids[#ids + 1] = id
      drop = drop + 1
    end
  end
  if drop > 0 then
    hdel_all(KEYS[5], ids)
    redis.call('ZREMRANGEBYRANK', KEYS[4], 0, drop - 1)
  end
  redis.call('HSET', KEYS[1], 'bytes', bytes)
end
if ARGV[5] ~= '' then
  if redis.call('HGET', KEYS[3], 'id') == ARGV[5] then redis.call('DEL', KEYS[3]) end
  redis.call('HSET', KEYS[6], ARGV[5], 'consumed')
end
if ARGV[6] ~= '' then
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'id', ARGV[6], 'data', ARGV[7])
  -- The pending state never outlives its thread.
  redis.call('PEXPIREAT', KEYS[3], math.min(tonumber(ARGV[8]), now + ttl))
  redis.call('HSET', KEYS[6], ARGV[6], 'issued')
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', now)
if #expired > 0 then
  hdel_all(KEYS[7], expired)
  redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
end
if ARGV[9] ~= '' then
  redis.call('HSET', KEYS[7], ARGV[9], ARGV[10])
  redis.call('ZADD', KEYS[8], now + tonumber(ARGV[11]), ARGV[9])
end
redis.call('HSET', KEYS[1], 'updated', ARGV[2], 'last_commit', ARGV[12])
for _, k in ipairs({KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]}) do
  redis.call('PEXPIRE', k, ttl)
end
redis.call('DEL', KEYS[2])
return {'OK'}
`)

// releaseScript: KEYS lock; ARGV token. Returns LOCKLOST | OK.
// A repeat after a successful first run answers LOCKLOST: the state is the
// same (the lock is gone, and a lock another turn took since is left alone),
// and callers ignore a release's error, so no record of releases is kept.
var releaseScript = newScript(`
local held = redis.call('GET', KEYS[1])
if not held then return {'LOCKLOST'} end
local token = lock_parts(held)
if token ~= ARGV[1] then return {'LOCKLOST'} end
redis.call('DEL', KEYS[1])
return {'OK'}
`)

// historyScript: KEYS thread, msgs, msgdata; ARGV principal, limit, before.
// Returns NOTFOUND | BADCURSOR | OK, more (0|1), page messages oldest first.
var historyScript = newScript(`
if not owned_thread(KEYS[1], ARGV[1]) then return {'NOTFOUND'} end
local limit = tonumber(ARGV[2])
local ids
if ARGV[3] == '' then
  ids = redis.call('ZRANGE', KEYS[2], -(limit + 1), -1)
else
  local score = redis.call('ZSCORE', KEYS[2], ARGV[3])
  if not score then return {'BADCURSOR'} end
  -- One more than the page tells whether older messages exist.
  ids = redis.call('ZREVRANGEBYSCORE', KEYS[2], '(' .. score, '-inf', 'LIMIT', 0, limit + 1)
  local asc = {}
  for i = #ids, 1, -1 do asc[#asc + 1] = ids[i] end
  ids = asc
end
local more = 0
if #ids > limit then
  more = 1
  table.remove(ids, 1)
end
if #ids == 0 then return {'OK', more} end
return append_all({'OK', more}, hmget_all(KEYS[3], ids))
`)
