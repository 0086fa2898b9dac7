-- KEYS thread, lock, pending, msgs, msgdata, idem, idemexp,
-- history; ARGV 1 principal, 2 idempotency field (empty for none), 3 token,
-- 4 lock_ttl_ms, 5 turn id, 6 fingerprint, 7 the turn's first event as a log
-- record after its length, "<length>|<record>" ("0|" for none; kept in the
-- lock), 8 the time it starts (Unix ms, the instance's clock, as every other
-- time chatd records), then the window: its default, then processor and
-- window pairs.
-- Returns NOTFOUND | REPLAY + thread + record | BUSY | RUNNING + turn id +
-- fingerprint | PENDING + pending JSON | OK + thread + window messages.
-- A lock held by ARGV token was taken by a first run of this call: nothing
-- can have changed under it, so the answer is the first run's again.

-- read_window is the thread's newest n messages. The history code it calls
-- is linked inside it, where --[[helpers]] stands, so that only a begin whose
-- thread reads a window makes its closures: most processors read none.
local function read_window(n)
  --[[helpers]]
  return hist_window(KEYS[1], KEYS[4], KEYS[5], KEYS[8], n)
end
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
