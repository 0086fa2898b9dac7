-- Reading a thread record, and the history window a begin returns.

-- owned_thread returns the thread record's fields (owner, processor,
-- created, updated, title, metadata, preview; absent ones false), or nil when
-- the thread is missing or principal does not own it.
local function owned_thread(key, principal)
  local t = redis.call('HMGET', key, 'owner', 'processor', 'created', 'updated', 'title', 'metadata', 'preview')
  if not t[1] or t[1] ~= principal then return nil end
  return t
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

-- window_size is the history window for a thread bound to processor: n,
-- unless the processor name and window pairs from ARGV[first] on name it.
local function window_size(processor, n, first)
  n = tonumber(n)
  for i = first, #ARGV - 1, 2 do
    if ARGV[i] == processor then n = tonumber(ARGV[i + 1]) end
  end
  return n
end
