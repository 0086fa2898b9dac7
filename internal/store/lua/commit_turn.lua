-- Writes a turn's outcome and releases its lock, all or nothing, while the
-- token still holds the lock: messages appended to history (and the oldest
-- trimmed), the elicitation answered and the one asked, the idempotency
-- record, the preview, and the turn's log ended with its last events.
-- The messages join the tree after their parent (see lua/lib/tree.lua).
-- Returns NOTFOUND | LOCKLOST | OK.
-- Every commit records its call ID as the thread's last_commit: when the
-- token no longer holds the lock because a first run of this call committed
-- and released it, the repeat answers OK and writes nothing. A later commit
-- overwrites last_commit, so a repeat that arrives only after another turn
-- has begun and committed answers LOCKLOST; go-redis re-sends after a short
-- backoff, well before a whole turn can run in between. A second CommitTurn
-- call with the same token has a new call ID and gets LOCKLOST, so its
-- messages are never reported kept while dropped.
local thread_key = KEYS[1]
local lock_key = KEYS[2]
local pending_key = KEYS[3]
local msgs_key = KEYS[4]
local msgdata_key = KEYS[5]
local elicitations_key = KEYS[6]
local idem_key = KEYS[7]
local idemexp_key = KEYS[8]
local log_key = KEYS[9]
local history_key = KEYS[10]
local tree_key = KEYS[11]
local token = ARGV[1]
local call_id = ARGV[2]
local updated = ARGV[3]
local thread_ttl_ms = ARGV[4]
local history_max = ARGV[5]
local history_max_bytes = ARGV[6]
local consumed_id = ARGV[7]   -- '' for none
local pause_id = ARGV[8]      -- '' for none
local pause = ARGV[9]         -- the pending elicitation's JSON
local pause_expires_ms = ARGV[10]
local idem_field = ARGV[11]   -- '' for none
local idem = ARGV[12]         -- the idempotency record's JSON
local idem_ttl_ms = ARGV[13]
local preview = ARGV[14]      -- '' to leave it
local events_ttl_ms = ARGV[15] -- 0: the turn keeps no log
local last_event = ARGV[16]   -- see close_log
local log_records = ARGV[17]
local parent = ARGV[18]       -- the first message's parent: '-' the head, '' none, or its ID
local messages = 19           -- ARGV[19…]: ID and JSON of each message

-- follows_newest reports whether the commit keeps a thread with no
-- branches one branch: its first message follows the newest (the head),
-- or is the first of an empty thread. Most commits do, and then need no
-- tree entry nor any lookup.
local function follows_newest()
  if redis.call('EXISTS', tree_key) == 1 then return false end
  if parent == '-' then return true end
  local seq = tonumber(redis.call('HGET', thread_key, 'seq')) or 0
  if parent == '' then return seq == 0 end
  local r = redis.call('HGET', history_key, 'p' .. seq)
  return r ~= false and string.sub(r, 1, 44) == '{"id":"' .. parent .. '"'
end

if redis.call('EXISTS', thread_key) == 0 then return {'NOTFOUND'} end
local held = redis.call('GET', lock_key)
if not held or lock_token(held) ~= token then
  if redis.call('HGET', thread_key, 'last_commit') == call_id then return {'OK'} end
  return {'LOCKLOST'}
end

local fields = {'updated', updated, 'last_commit', call_id}
if #ARGV >= messages then
  local ids, datas = {}, {}
  for i = messages, #ARGV - 1, 2 do
    ids[#ids + 1], datas[#datas + 1] = ARGV[i], ARGV[i + 1]
  end
  local branched = not follows_newest()
  local first
  if branched then first = tree_link(thread_key, msgs_key, msgdata_key, history_key, tree_key, parent, ids, thread_ttl_ms) end
  hist_append(thread_key, msgs_key, msgdata_key, history_key, ids, datas, tonumber(history_max), tonumber(history_max_bytes), fields)
  if branched then tree_trim(tree_key, first, tonumber(redis.call('HGET', thread_key, 'hfirst'))) end
else
  redis.call('HSET', thread_key, unpack(fields))
end
if consumed_id ~= '' then
  if redis.call('HGET', pending_key, 'id') == consumed_id then redis.call('DEL', pending_key) end
  redis.call('HSET', elicitations_key, consumed_id, 'consumed')
end
if pause_id ~= '' then
  redis.call('DEL', pending_key)
  redis.call('HSET', pending_key, 'id', pause_id, 'data', pause)
  -- The pending state never outlives its thread.
  redis.call('PEXPIREAT', pending_key, math.min(tonumber(pause_expires_ms), now_ms() + tonumber(thread_ttl_ms)))
  redis.call('HSET', elicitations_key, pause_id, 'issued')
end
if idem_field ~= '' then
  -- Idempotency records are swept and their keys' lives extended when one
  -- is added: a record only matters for IdempotencyTTL after it is written,
  -- and a thread that stops sending keys keeps what it has until then at
  -- most, so its other turns need not touch them.
  local now = now_ms()
  local expired = redis.call('ZRANGEBYSCORE', idemexp_key, '-inf', now)
  if #expired > 0 then
    hdel_all(idem_key, expired)
    redis.call('ZREMRANGEBYSCORE', idemexp_key, '-inf', now)
  end
  redis.call('HSET', idem_key, idem_field, idem)
  redis.call('ZADD', idemexp_key, now + tonumber(idem_ttl_ms), idem_field)
  local keep = math.max(tonumber(thread_ttl_ms), tonumber(idem_ttl_ms))
  redis.call('PEXPIRE', idem_key, keep)
  redis.call('PEXPIRE', idemexp_key, keep)
end
if preview ~= '' then redis.call('HSETNX', thread_key, 'preview', preview) end
redis.call('PEXPIRE', thread_key, thread_ttl_ms)
touch_files(thread_key, thread_ttl_ms)
redis.call('PEXPIRE', history_key, thread_ttl_ms)
redis.call('PEXPIRE', elicitations_key, thread_ttl_ms)
if events_ttl_ms ~= '0' then close_log(log_key, last_event, log_records, events_ttl_ms) end
redis.call('DEL', lock_key)
return {'OK'}
