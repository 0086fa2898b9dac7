-- Begins a plain turn. In this order: the principal must own the thread; a
-- live idempotency record for the key is replayed, with no lock taken; a
-- held lock is BUSY, or RUNNING when its turn was begun with the same key;
-- a live pending elicitation is PENDING; otherwise the turn takes the lock,
-- which keeps the turn's first event until its log needs more.
-- Returns NOTFOUND | REPLAY + thread + record | BUSY | RUNNING + turn ID +
-- fingerprint | PENDING + pending JSON | OK + thread + window messages.
-- A lock held by this call's token was taken by a first run of this call:
-- nothing can have changed under it, so the answer is the first run's again.
local thread_key = KEYS[1]
local lock_key = KEYS[2]
local pending_key = KEYS[3]
local msgs_key = KEYS[4]
local msgdata_key = KEYS[5]
local idem_key = KEYS[6]
local idemexp_key = KEYS[7]
local history_key = KEYS[8]
local principal = ARGV[1]
local idem_field = ARGV[2]    -- '' for none
local token = ARGV[3]
local lock_ttl_ms = ARGV[4]
local turn_id = ARGV[5]       -- '' for a turn that keeps no log
local fingerprint = ARGV[6]
local first_record = ARGV[7]  -- "<length>|<record>" ("0|" for none), see lock_value
local started_ms = ARGV[8]    -- chatd's clock, as every time it records
local window = ARGV[9]        -- the history window, unless a pair below names the processor
local window_pairs = 10       -- ARGV[10…]: processor name and window pairs

-- read_window is the thread's newest n messages. The history code it calls
-- is linked inside it, where --[[helpers]] stands, so that only a begin whose
-- thread reads a window makes its closures: most processors read none.
local function read_window(n)
  --[[helpers]]
  return hist_window(thread_key, msgs_key, msgdata_key, history_key, n)
end

local t = owned_thread(thread_key, principal)
if not t then return {'NOTFOUND'} end
if idem_field ~= '' then
  local rec = redis.call('HGET', idem_key, idem_field)
  local exp = redis.call('ZSCORE', idemexp_key, idem_field)
  if rec and exp and tonumber(exp) > now_ms() then
    local out = thread_reply({'REPLAY'}, t, lock_key)
    out[#out + 1] = rec
    return out
  end
end
local function ok(turn, started)
  local out = thread_reply({'OK'}, t, lock_key, turn, started)
  local n = window_size(t[2], window, window_pairs)
  if n <= 0 then return out end
  return append_all(out, read_window(n))
end
local held = redis.call('GET', lock_key)
if held then
  local held_token, claim, held_turn, _, held_fingerprint, held_idem = lock_parts(held)
  if held_token == token and claim == '' then return ok() end
  if idem_field ~= '' and held_idem == idem_field then return {'RUNNING', held_turn, held_fingerprint} end
  return {'BUSY'}
end
local p = redis.call('HGET', pending_key, 'data')
if p then return {'PENDING', p} end
redis.call('SET', lock_key, lock_value(token, '', turn_id, started_ms, fingerprint, idem_field, first_record), 'PX', lock_ttl_ms)
if turn_id == '' then return ok(false, false) end
return ok(turn_id, started_ms)
