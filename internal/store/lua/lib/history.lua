-- A thread's history in Redis: every script reads and writes it through
-- these functions only.
--
-- Layout (KEYS: the thread hash T and the history hash H), positions counted
-- from 1 in commit order, in chunks of 32:
--
--  H "<c>"     sealed chunk c (positions c*32+1 … c*32+32): their JSON,
--              each followed by "\n" (encoding/json never writes a raw
--              newline); never rewritten, so records trimmed since stay
--              until the whole chunk is
--  H "x<c>"    "<greatest ID up to the chunk's end>|<len>,<len>,…": the
--              greatest message ID in byte order over the kept positions up
--              to c*32+32 (never decreasing from chunk to chunk), then each
--              record's length
--  H "p<pos>"  the JSON of a position not yet sealed: the newest 64 to 95
--  H "i:<id>"  the position of a message not yet sealed
--  H "o:<id>"  the position of a message whose ID was not greater than
--              every ID before it (minted on an instance whose clock was
--              behind)
--  T seq       the newest position; T hfirst the oldest kept (default 1);
--  T hmax      the greatest ID so far; T bytes the JSON bytes kept;
--  T hooo      how many "o:" entries exist
--
-- A message's JSON starts with {"id":"<id>" (encodeMessages checks it), so
-- sealed records carry no ID of their own. Per message Redis keeps its JSON,
-- a newline and a share of two hash entries per 32 messages — about 1.1
-- times the JSON, where a sorted-set entry and a hash entry per message cost
-- 2.1 — plus, for the newest 64 to 95 only, two entries each.
--
-- Lua copies every string it touches and a 7 KiB chunk costs microseconds
-- each time, so the newest messages stay in small fields: a commit writes
-- only those, and windows and pages of up to 64 of the newest read only
-- those. A chunk is built once, when its last position is 64 behind the
-- newest; trimming reads only the lengths in "x". Scripts return the JSON of
-- a run of records as one newline-separated string, split by splitRecords
-- in Go.
--
-- A window or a page is found by position arithmetic and read from the
-- fields or chunks it spans: O(page). A cursor's position is its "i:" or
-- "o:" entry, or is found by binary search over the "x" entries — UUIDv7s
-- minted in order make the first chunk whose greatest ID is not less than
-- the cursor the only one that can hold it — then a look at that chunk's 32
-- record starts: O(log n).
--
-- Threads written by the earlier layout (a sorted set chatd:{T}:msgs of
-- IDs by position and a hash chatd:{T}:msgdata of JSON) are converted the
-- first time a script reads or writes their history: once per thread,
-- O(its length).

local CHUNK, LIVE = 32, 64

-- id_less compares IDs byte by byte. Lua's < on strings follows the
-- server's collation (strcoll), which is byte order only in the C locale,
-- so < is used when this server's collation orders the characters of IDs
-- (hyphen, digits, lower and upper case) as bytes do: 'B' < 'a' holds in no
-- alphabetical collation. Otherwise time-ordered IDs, which share long
-- prefixes, are compared skipping equal 8-byte blocks first: a call into
-- Lua's string library costs far more than comparing the strings it returns.
local BYTE_COLLATION = '-' < '0' and '9' < 'A' and 'Z' < 'a' and 'B' < 'a'
local function id_less(a, b)
  if BYTE_COLLATION then return a < b end
  if a == b then return false end
  local i, n = 1, math.min(#a, #b)
  while i + 7 <= n and string.sub(a, i, i + 7) == string.sub(b, i, i + 7) do i = i + 8 end
  while i <= n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
    i = i + 1
  end
  return #a < #b
end

local function chunk_of(pos) return math.floor((pos - 1) / CHUNK) end

-- sealed_end is the last position in a sealed chunk when the newest is seq.
local function sealed_end(seq) return math.max(0, math.floor((seq - LIVE) / CHUNK) * CHUNK) end

local function record_id(r) return string.match(r, '^{"id":"([^"]*)"') end

-- hist_state returns seq, first, greatest ID, bytes, out-of-order count,
-- and whether the thread has a first position yet (it gets one with its
-- first commit, or when an earlier layout is converted).
local function hist_state(t)
  local s = redis.call('HMGET', t, 'seq', 'hfirst', 'hmax', 'bytes', 'hooo')
  return tonumber(s[1]) or 0, tonumber(s[2]) or 1, s[3] or '', tonumber(s[4]) or 0, tonumber(s[5]) or 0, s[2] ~= false
end

-- chunk_top returns sealed chunk c's greatest ID, or nil.
local function chunk_top(h, c)
  local x = redis.call('HGET', h, 'x' .. c)
  if not x then return nil end
  return string.sub(x, 1, string.find(x, '|', 1, true) - 1)
end

-- chunk_lens returns the lengths of sealed chunk c's records.
local function chunk_lens(h, c)
  local x = redis.call('HGET', h, 'x' .. c)
  local lens = {}
  for n in string.gmatch(string.sub(x, string.find(x, '|', 1, true) + 1), '%d+') do lens[#lens + 1] = tonumber(n) end
  return lens
end

-- Chunks read by this script run, so a lookup and the page after it pull a
-- chunk into Lua once.
local chunks = {}
local function chunk(h, c)
  if not chunks[c] then chunks[c] = redis.call('HGET', h, tostring(c)) or '' end
  return chunks[c]
end

-- seal builds chunk c from its fields.
local function seal(h, c)
  local fields, index = {}, {}
  for pos = c * CHUNK + 1, c * CHUNK + CHUNK do fields[#fields + 1] = 'p' .. pos end
  local recs = redis.call('HMGET', h, unpack(fields))
  local lens, ids = {}, {}
  for i = 1, #recs do
    -- A position trimmed before its chunk was sealed is an empty record.
    recs[i] = recs[i] or ''
    lens[i] = #recs[i]
    ids[i] = record_id(recs[i])
    if ids[i] then index[#index + 1] = 'i:' .. ids[i] end
  end
  -- The greatest ID up to the chunk's end is its last kept record appended
  -- in order (one with an "i:" entry): each such record was greater than
  -- everything before it, and each record appended out of order smaller
  -- than the greatest before it. Trimming takes the oldest first, so no
  -- trimmed record follows it. Only a chunk with no kept record in order
  -- is compared ID by ID (each comparison is a loop of Lua string calls).
  local top = nil
  for i = #recs, 1, -1 do
    if ids[i] and redis.call('HEXISTS', h, 'i:' .. ids[i]) == 1 then
      top = ids[i]
      break
    end
  end
  if not top then
    top = (c > 0 and chunk_top(h, c - 1)) or ''
    for i = 1, #recs do
      if ids[i] and id_less(top, ids[i]) then top = ids[i] end
    end
  end
  -- An empty last record ends the chunk with a newline: joined once, not
  -- joined and then copied with one more byte.
  recs[#recs + 1] = ''
  redis.call('HSET', h, tostring(c), table.concat(recs, '\n'), 'x' .. c, top .. '|' .. table.concat(lens, ','))
  redis.call('HDEL', h, unpack(fields))
  if #index > 0 then redis.call('HDEL', h, unpack(index)) end
end

-- hist_put appends records after position seq, ids[i] naming datas[i],
-- seals the chunks that fall behind, and returns the new greatest ID and
-- out-of-order count, which the caller records in the thread hash.
local function hist_put(h, seq, top, ooo, ids, datas)
  -- One HSET for them all; each position formatted once (Lua formats a
  -- number with printf).
  local args = {}
  for i = 1, #ids do
    local pos = tostring(seq + i)
    local index = 'o:'
    if id_less(top, ids[i]) then
      top, index = ids[i], 'i:'
    else
      ooo = ooo + 1
    end
    args[#args + 1], args[#args + 2], args[#args + 3], args[#args + 4] = 'p' .. pos, datas[i], index .. ids[i], pos
  end
  if #args > 0 then redis.call('HSET', h, unpack(args)) end
  for pos = sealed_end(seq) + CHUNK, sealed_end(seq + #ids), CHUNK do seal(h, chunk_of(pos)) end
  return top, ooo
end

-- hist_upgrade converts a thread written by the earlier layout (msgs, a
-- sorted set of IDs by position; msgdata, a hash of JSON).
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
  redis.call('HSET', t, 'hfirst', first, 'bytes', bytes)
  if #keep > 0 then
    -- Positions before first exist only as empty records of their chunk.
    local top, ooo = hist_put(h, first - 1, '', 0, keep_ids, keep)
    redis.call('HSET', t, 'hmax', top, 'hooo', ooo)
    local ttl = redis.call('PTTL', t)
    if ttl > 0 then redis.call('PEXPIRE', h, ttl) end
  end
  redis.call('HSET', t, 'seq', seq)
  redis.call('DEL', msgs, msgdata)
end

-- hist_open returns the history's state (see hist_state), converting a
-- thread written by the earlier layout first. Only a thread without a first
-- position can be one, so the others are not looked for.
local function hist_open(t, msgs, msgdata, h)
  local seq, first, top, bytes, ooo, positioned = hist_state(t)
  if positioned or redis.call('EXISTS', msgs) == 0 then return seq, first, top, bytes, ooo, positioned end
  hist_upgrade(t, msgs, msgdata, h)
  return hist_state(t)
end

-- hist_range returns the JSON of positions lo … hi, oldest first, as
-- strings of newline-separated records.
local function hist_range(h, seq, lo, hi)
  local out = {}
  if hi < lo then return out end
  local sealed = sealed_end(seq)
  for c = chunk_of(lo), chunk_of(hi) do
    local base = c * CHUNK
    local a, b = math.max(lo, base + 1), math.min(hi, base + CHUNK)
    if b <= sealed then
      local s = chunk(h, c)
      if a == base + 1 and b == base + CHUNK then
        out[#out + 1] = s
      else
        local lens = chunk_lens(h, c)
        local from, k = 1, base + 1
        while k < a do from, k = from + lens[k - base] + 1, k + 1 end
        local to = from - 1
        while k <= b do to, k = to + lens[k - base] + 1, k + 1 end
        out[#out + 1] = string.sub(s, from, to)
      end
    else
      local fields = {}
      for pos = a, b do fields[#fields + 1] = 'p' .. pos end
      for _, v in ipairs(redis.call('HMGET', h, unpack(fields))) do
        if v then out[#out + 1] = v end
      end
    end
  end
  return out
end

-- hist_window returns the newest n messages' JSON, oldest first, converting
-- an earlier layout first.
local function hist_window(t, msgs, msgdata, h, n)
  if n <= 0 then return {} end
  local seq, first = hist_open(t, msgs, msgdata, h)
  return hist_range(h, seq, math.max(first, seq - n + 1), seq)
end

-- hist_position returns the position of message id, or nil.
local function hist_position(h, seq, first, id)
  local at = redis.call('HMGET', h, 'i:' .. id, 'o:' .. id)
  local p = tonumber(at[1] or at[2])
  if p then
    if p >= first and p <= seq then return p end
    return nil
  end
  -- Sealed chunks: the first whose greatest ID is not less than id.
  local lo, hi = chunk_of(first), sealed_end(seq) / CHUNK - 1
  local found = nil
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local top = chunk_top(h, mid)
    if top and not id_less(top, id) then
      found, hi = mid, mid - 1
    else
      lo = mid + 1
    end
  end
  if not found then return nil end
  local lens, s = chunk_lens(h, found), chunk(h, found)
  local off, needle = 1, '{"id":"' .. id .. '"'
  for k = 1, #lens do
    if lens[k] > 0 and string.sub(s, off, off + #needle - 1) == needle then
      local pos = found * CHUNK + k
      if pos >= first then return pos end
      return nil
    end
    off = off + lens[k] + 1
  end
  return nil
end

-- forget_ids removes the "o:" entries of the records in s (a chunk), and
-- returns how many there were.
local function forget_ids(h, s)
  local gone = {}
  for id in string.gmatch('\n' .. s, '\n{"id":"([^"]*)"') do gone[#gone + 1] = 'o:' .. id end
  if #gone > 0 then return redis.call('HDEL', h, unpack(gone)) end
  return 0
end

-- hist_append appends messages (ids[i] naming datas[i]) and trims the
-- oldest beyond maxcount, then until the rest is within maxbytes (the newest
-- message being kept whatever its size). fields are more field and value
-- pairs of the thread hash, written in the same HSET as the history's.
local function hist_append(t, msgs, msgdata, h, ids, datas, maxcount, maxbytes, fields)
  local seq, first, top, bytes, ooo, positioned = hist_open(t, msgs, msgdata, h)
  local first0, top0, ooo0 = first, top, ooo
  for i = 1, #datas do bytes = bytes + #datas[i] end
  top, ooo = hist_put(h, seq, top, ooo, ids, datas)
  seq = seq + #ids
  local sealed = sealed_end(seq)
  local drop = math.max(seq - first + 1 - maxcount, 0)
  local lens, lens_of = nil, -1
  while first <= seq - 1 and (drop > 0 or bytes > maxbytes) do
    local c = chunk_of(first)
    if first <= sealed then
      if lens_of ~= c then lens, lens_of = chunk_lens(h, c), c end
      bytes = bytes - lens[first - c * CHUNK]
      if first == c * CHUNK + CHUNK then
        if ooo > 0 then ooo = ooo - forget_ids(h, chunk(h, c)) end
        redis.call('HDEL', h, tostring(c), 'x' .. c)
      end
    else
      local f = 'p' .. first
      local r = redis.call('HGET', h, f) or ''
      local id = record_id(r) or ''
      ooo = ooo - redis.call('HDEL', h, 'o:' .. id)
      redis.call('HDEL', h, f, 'i:' .. id)
      bytes = bytes - #r
    end
    first, drop = first + 1, drop - 1
  end
  -- One write of the thread hash for the history and the caller's fields,
  -- with only the history's fields that changed.
  local out = {'seq', seq, 'bytes', bytes}
  if top ~= top0 then out[#out + 1], out[#out + 2] = 'hmax', top end
  if first ~= first0 or not positioned then out[#out + 1], out[#out + 2] = 'hfirst', first end
  if ooo ~= ooo0 then out[#out + 1], out[#out + 2] = 'hooo', ooo end
  for i = 1, #fields do out[#out + 1] = fields[i] end
  redis.call('HSET', t, unpack(out))
end

-- hist_page returns more (0|1) and the JSON of the newest limit messages
-- older than before (all, when before is ''), oldest first; nil when before
-- is not in the history.
local function hist_page(t, msgs, msgdata, h, limit, before)
  local seq, first = hist_open(t, msgs, msgdata, h)
  local hi = seq
  if before ~= '' then
    local p = hist_position(h, seq, first, before)
    if not p then return nil end
    hi = p - 1
  end
  local lo = math.max(first, hi - limit + 1)
  local more = 0
  if lo > first then more = 1 end
  return more, hist_range(h, seq, lo, hi)
end
