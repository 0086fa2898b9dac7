-- Begins a plain turn. In this order: the principal must own the thread; a
-- live idempotency record for the key is replayed, with no lock taken; a
-- held lock is BUSY, or RUNNING when its turn was begun with the same key;
-- a live pending elicitation is PENDING; otherwise the turn takes the lock,
-- which keeps the turn's first event until its log needs more.
-- Returns NOTFOUND | REPLAY + thread + record | BUSY | RUNNING + turn ID +
-- fingerprint | PENDING + pending JSON | NOMESSAGE (the branch names a
-- message the history does not hold; no lock taken) | OK + thread + the ID
-- of the branch's last message ('' for none) + the head's ID + window
-- messages.
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
local tree_key = KEYS[9]
local principal = ARGV[1]
local idem_field = ARGV[2]    -- '' for none
local token = ARGV[3]
local lock_ttl_ms = ARGV[4]
local turn_id = ARGV[5]       -- '' for a turn that keeps no log
local fingerprint = ARGV[6]
local first_record = ARGV[7]  -- "<length>|<record>" ("0|" for none), see lock_value
local started_ms = ARGV[8]    -- chatd's clock, as every time it records
local branch = ARGV[9]        -- the branch's last message: '-' the head's, '' none, or its ID
local window = ARGV[10]       -- the history window, unless a pair below names the processor
local window_pairs = 11       -- ARGV[11…]: processor name and window pairs

-- read_branch is the ID of the branch's last message, the head's, and the
-- branch's newest n messages; nil when the history does not hold that
-- message. The history
-- code it calls is linked inside it, where --[[helpers]] stands, so that
-- only a begin that reads history makes its closures.
local function read_branch(n)
  --[[helpers]]
  local leaf, recs = tree_window(thread_key, msgs_key, msgdata_key, history_key, tree_key, branch, n)
  local head = leaf
  if branch ~= '-' then head = tree_head_id(thread_key, msgs_key, msgdata_key, history_key, tree_key) end
  return leaf, head, recs
end

-- newest_head is the head's ID for a begin that reads no window on a
-- thread with no branches, where the head is the newest record, which is
-- always in a field of its own: no history code is linked for it. nil
-- sends the begin the general way (branches, an earlier layout).
local function newest_head()
  if branch ~= '-' or redis.call('EXISTS', tree_key) == 1 then return nil end
  local s = redis.call('HMGET', thread_key, 'seq', 'hfirst')
  if not s[2] then
    if redis.call('EXISTS', msgs_key) == 1 then return nil end
    return ''
  end
  local r = redis.call('HGET', history_key, 'p' .. (tonumber(s[1]) or 0))
  if not r then return nil end
  return string.match(r, '^{"id":"([^"]*)"')
end

-- branch_of is read_branch, the short way when it can be.
local function branch_of(n)
  if n <= 0 then
    local head = newest_head()
    if head then return head, head, {} end
  end
  return read_branch(n)
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
local function ok(leaf, head, recs, turn, started)
  local out = thread_reply({'OK'}, t, lock_key, turn, started)
  out[#out + 1] = leaf
  out[#out + 1] = head
  return append_all(out, recs)
end
local held = redis.call('GET', lock_key)
if held then
  local held_token, claim, held_turn, _, held_fingerprint, held_idem = lock_parts(held)
  if held_token == token and claim == '' then return ok(branch_of(window_size(t[2], window, window_pairs))) end
  if idem_field ~= '' and held_idem == idem_field then return {'RUNNING', held_turn, held_fingerprint} end
  return {'BUSY'}
end
local p = redis.call('HGET', pending_key, 'data')
if p then return {'PENDING', p} end
local leaf, head, recs = branch_of(window_size(t[2], window, window_pairs))
if not leaf then return {'NOMESSAGE'} end
redis.call('SET', lock_key, lock_value(token, '', turn_id, started_ms, fingerprint, idem_field, first_record), 'PX', lock_ttl_ms)
if turn_id == '' then return ok(leaf, head, recs, false, false) end
return ok(leaf, head, recs, turn_id, started_ms)
