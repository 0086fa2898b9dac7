package store

// historyLua lays out and reads a thread's history in Redis. It is part of
// every script (see luaHelpers), so each script reads and writes history
// through these functions only.
//
// Layout (KEYS: the thread hash T and the history hash H):
//
//	H "<c>"     chunk c: the JSON of history positions c*32+1 … c*32+32
//	            still kept, each followed by "\n" (encoding/json never
//	            writes a raw newline), oldest first
//	H "x<c>"    the greatest message ID (byte order) among positions 1 …
//	            the end of chunk c: never decreasing from chunk to chunk
//	H "o:<id>"  the position of a message whose ID was not greater than
//	            every ID before it (minted on an instance whose clock was
//	            behind)
//	T seq       the newest position; T hfirst the oldest kept (default 1);
//	T hmax      the greatest ID so far; T bytes the JSON bytes kept
//
// A message's JSON starts with {"id":"<id>" (encodeMessages checks it), so
// records carry no ID of their own. Per message, Redis keeps its JSON, a
// newline and a share of one hash entry per 32 messages: about 1.1 times the
// JSON, where a sorted-set entry and a hash entry per message cost 2.1.
//
// Positions are counted, so a window or a page is found by arithmetic and
// read from the one to eight chunks it spans: O(page). A cursor's position
// is its "o:" entry, or else found by binary search over the chunks' x
// entries — UUIDv7s minted in order make the first chunk whose x is not
// less than the ID the only one that can hold it — then a scan of that
// chunk: O(log n) + O(32). Trimming drops whole chunks and rewrites the
// oldest remaining one.
//
// Threads written by the earlier layout (a sorted set chatd:{T}:msgs of
// IDs and a hash chatd:{T}:msgdata of JSON) are converted the first time a
// script reads or writes their history: once per thread, O(its length).
const historyLua = `
local CHUNK = 32

-- id_less compares IDs byte by byte: Lua's < on strings follows the server's
-- locale, which a replica need not share.
local function id_less(a, b)
  if a == b then return false end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function chunk_of(pos) return math.floor((pos - 1) / CHUNK) end

-- chunk_base is the position of chunk c's first record.
local function chunk_base(c, first) return math.max(c * CHUNK + 1, first) end

local function split_records(s)
  local out = {}
  if not s then return out end
  local start = 1
  while true do
    local nl = string.find(s, '\n', start, true)
    if not nl then return out end
    out[#out + 1] = string.sub(s, start, nl - 1)
    start = nl + 1
  end
end

local function record_id(r) return string.match(r, '^{"id":"([^"]*)"') end

-- hist_state returns seq, first, greatest ID and bytes of thread key t.
local function hist_state(t)
  local s = redis.call('HMGET', t, 'seq', 'hfirst', 'hmax', 'bytes')
  return tonumber(s[1]) or 0, tonumber(s[2]) or 1, s[3] or '', tonumber(s[4]) or 0
end

-- hist_put appends records after position seq, ids[i] naming datas[i].
local function hist_put(t, h, seq, first, top, ids, datas)
  local c = chunk_of(seq + 1)
  local cur = redis.call('HGET', h, tostring(c)) or ''
  for i = 1, #ids do
    local pc = chunk_of(seq + i)
    if pc ~= c then
      redis.call('HSET', h, tostring(c), cur, 'x' .. c, top)
      c, cur = pc, ''
    end
    if id_less(top, ids[i]) then
      top = ids[i]
    else
      redis.call('HSET', h, 'o:' .. ids[i], seq + i)
    end
    cur = cur .. datas[i] .. '\n'
  end
  redis.call('HSET', h, tostring(c), cur, 'x' .. c, top)
  redis.call('HSET', t, 'seq', seq + #ids, 'hfirst', first, 'hmax', top)
end

-- hist_upgrade converts a thread written by the earlier layout (msgs, a
-- sorted set of IDs by position; msgdata, a hash of JSON) into chunks.
local function hist_upgrade(t, msgs, msgdata, h)
  if redis.call('EXISTS', msgs) == 0 then return end
  local ids = redis.call('ZRANGE', msgs, 0, -1)
  local datas = hmget_all(msgdata, ids)
  local keep_ids, keep = {}, {}
  local bytes = 0
  for i = 1, #ids do
    if datas[i] then
      keep_ids[#keep_ids + 1], keep[#keep + 1] = ids[i], datas[i]
      bytes = bytes + #datas[i]
    end
  end
  local seq = tonumber(redis.call('HGET', t, 'seq')) or #keep
  local first = seq - #keep + 1
  redis.call('DEL', h)
  if #keep > 0 then hist_put(t, h, first - 1, first, '', keep_ids, keep) end
  redis.call('HSET', t, 'seq', seq, 'hfirst', first, 'bytes', bytes)
  local ttl = redis.call('PTTL', t)
  if ttl > 0 and #keep > 0 then redis.call('PEXPIRE', h, ttl) end
  redis.call('DEL', msgs, msgdata)
end

-- hist_range returns the JSON of positions lo … hi, oldest first.
local function hist_range(h, first, lo, hi)
  local out = {}
  if hi < lo then return out end
  local c1 = chunk_of(lo)
  local fields = {}
  for c = c1, chunk_of(hi) do fields[#fields + 1] = tostring(c) end
  for i, s in ipairs(hmget_all(h, fields)) do
    local base = chunk_base(c1 + i - 1, first)
    for j, r in ipairs(split_records(s)) do
      local pos = base + j - 1
      if pos > hi then return out end
      if pos >= lo then out[#out + 1] = r end
    end
  end
  return out
end

-- hist_window returns the newest n messages' JSON, oldest first, converting
-- an earlier layout first.
local function hist_window(t, msgs, msgdata, h, n)
  hist_upgrade(t, msgs, msgdata, h)
  if n <= 0 then return {} end
  local seq, first = hist_state(t)
  return hist_range(h, first, math.max(first, seq - n + 1), seq)
end

-- hist_position returns the position of message id, or nil.
local function hist_position(h, seq, first, id)
  if seq < first then return nil end
  local p = tonumber(redis.call('HGET', h, 'o:' .. id))
  if p then
    if p >= first and p <= seq then return p end
    return nil
  end
  local lo, hi = chunk_of(first), chunk_of(seq)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local top = redis.call('HGET', h, 'x' .. mid)
    if top and not id_less(top, id) then hi = mid else lo = mid + 1 end
  end
  local base = chunk_base(lo, first)
  for j, r in ipairs(split_records(redis.call('HGET', h, tostring(lo)))) do
    if record_id(r) == id then return base + j - 1 end
  end
  return nil
end

-- hist_append appends messages (ids[i] naming datas[i]) and trims the
-- oldest beyond maxcount, then until the rest is within maxbytes (the newest
-- message being kept whatever its size).
local function hist_append(t, msgs, msgdata, h, ids, datas, maxcount, maxbytes)
  hist_upgrade(t, msgs, msgdata, h)
  local seq, first, top, bytes = hist_state(t)
  for i = 1, #datas do bytes = bytes + #datas[i] end
  hist_put(t, h, seq, first, top, ids, datas)
  seq = seq + #ids
  local count = seq - first + 1
  local drop = math.max(count - maxcount, 0)
  local c, last = chunk_of(first), chunk_of(seq)
  while (drop > 0 or (bytes > maxbytes and count > 1)) and c <= last do
    local recs = split_records(redis.call('HGET', h, tostring(c)))
    local gone = {}
    for _, r in ipairs(recs) do
      if drop > 0 then
        drop = drop - 1
      elseif not (bytes > maxbytes and count > 1) then
        break
      end
      bytes, count, first = bytes - #r, count - 1, first + 1
      gone[#gone + 1] = 'o:' .. (record_id(r) or '')
    end
    if #gone > 0 then hdel_all(h, gone) end
    if #gone < #recs then
      redis.call('HSET', h, tostring(c), table.concat(recs, '\n', #gone + 1) .. '\n')
      break
    end
    redis.call('HDEL', h, tostring(c), 'x' .. c)
    c = c + 1
  end
  redis.call('HSET', t, 'hfirst', first, 'bytes', bytes)
end

-- hist_page returns more (0|1) and the JSON of the newest limit messages
-- older than before (all, when before is ''), oldest first; nil when before
-- is not in the history.
local function hist_page(t, msgs, msgdata, h, limit, before)
  hist_upgrade(t, msgs, msgdata, h)
  local seq, first = hist_state(t)
  local hi = seq
  if before ~= '' then
    local p = hist_position(h, seq, first, before)
    if not p then return nil end
    hi = p - 1
  end
  local lo = math.max(first, hi - limit + 1)
  local more = 0
  if lo > first then more = 1 end
  return more, hist_range(h, first, lo, hi)
end
`
