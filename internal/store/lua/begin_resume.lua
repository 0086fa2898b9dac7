-- KEYS thread, lock, pending, msgs, msgdata, elicitations,
-- history; ARGV 1 principal, 2 elicitation id, 3 token, 4 lock_ttl_ms,
-- 5 turn id, 6 the turn's first event as a log record after its length
-- ("0|" for none), 7 the time it starts (Unix ms), then the window: its
-- default, then processor and window pairs.
-- Returns NOTFOUND | BUSY (another turn, or another answer's live claim)
-- | CONSUMED | EXPIRED [+ 'first'] | UNKNOWN
-- | OK + thread + pending JSON + window messages. A claim on this
-- elicitation held by ARGV token was taken by a first run of this call, which
-- answered OK; so does the repeat.

-- read_window is the thread's newest n messages. The history code it calls
-- is linked inside it, where --[[helpers]] stands, so that only a begin whose
-- thread reads a window makes its closures: most processors read none.
local function read_window(n)
  --[[helpers]]
  return hist_window(KEYS[1], KEYS[4], KEYS[5], KEYS[7], n)
end
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
