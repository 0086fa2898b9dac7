-- Begins the turn that answers an elicitation. While it is pending and
-- unclaimed, the turn claims it by taking the lock; another answer while the
-- claim's lock is held is BUSY. Otherwise the elicitation's record decides.
-- Returns NOTFOUND | BUSY (another turn, or another answer's live claim)
-- | CONSUMED | EXPIRED [+ 'first'] | UNKNOWN
-- | OK + thread + pending JSON + the head's ID, twice (the branch's last
-- message and the head, as a begin answers) + window messages (of the
-- head's branch).
-- A claim on this elicitation held by this call's token was taken by a first
-- run of this call, which answered OK; so does the repeat.
local thread_key = KEYS[1]
local lock_key = KEYS[2]
local pending_key = KEYS[3]
local msgs_key = KEYS[4]
local msgdata_key = KEYS[5]
local elicitations_key = KEYS[6]
local history_key = KEYS[7]
local tree_key = KEYS[8]
local principal = ARGV[1]
local elicitation_id = ARGV[2]
local token = ARGV[3]
local lock_ttl_ms = ARGV[4]
local turn_id = ARGV[5]       -- '' for a turn that keeps no log
local first_record = ARGV[6]  -- "<length>|<record>" ("0|" for none), see lock_value
local started_ms = ARGV[7]
local window = ARGV[8]        -- the history window, unless a pair below names the processor
local window_pairs = 9        -- ARGV[9…]: processor name and window pairs

-- read_branch is the head's ID and the newest n messages of its branch.
-- The history code it calls is linked inside it, where --[[helpers]]
-- stands, so that the script's other answers make none of its closures.
local function read_branch(n)
  --[[helpers]]
  return tree_window(thread_key, msgs_key, msgdata_key, history_key, tree_key, '-', n)
end

local t = owned_thread(thread_key, principal)
if not t then return {'NOTFOUND'} end
local p = redis.call('HMGET', pending_key, 'id', 'data')
if p[1] and p[1] == elicitation_id then
  local held = redis.call('GET', lock_key)
  if held then
    local held_token, claim = lock_parts(held)
    -- A live claim is an answer in progress, not a consumed elicitation:
    -- if its instance dies, the claim lapses with the lock's lease.
    if claim ~= elicitation_id or held_token ~= token then return {'BUSY'} end
  else
    redis.call('SET', lock_key, lock_value(token, elicitation_id, turn_id, started_ms, '', '', first_record), 'PX', lock_ttl_ms)
  end
  local out = thread_reply({'OK'}, t, lock_key)
  out[#out + 1] = p[2]
  local leaf, recs = read_branch(window_size(t[2], window, window_pairs))
  out[#out + 1] = leaf
  out[#out + 1] = leaf
  return append_all(out, recs)
end
local state = redis.call('HGET', elicitations_key, elicitation_id)
if state == 'consumed' then return {'CONSUMED'} end
if state == 'issued' then
  -- The first resume to find the pending state gone records the expiry, so
  -- it is reported as discovered once.
  redis.call('HSET', elicitations_key, elicitation_id, 'expired')
  return {'EXPIRED', 'first'}
end
if state == 'expired' then return {'EXPIRED'} end
return {'UNKNOWN'}
