-- KEYS thread, lock, pending, msgs, msgdata, elicitations,
-- idem, idemexp, turn events, history; ARGV 1 token, 2 updated, 3 history_max,
-- 4 thread_ttl_ms, 5 consumed id, 6 pause id, 7 pause JSON, 8 pause
-- expires_at_ms, 9 idempotency field, 10 idempotency record,
-- 11 idempotency_ttl_ms, 12 call id, 13 preview, 14 events_ttl_ms (0: no
-- turn log), 15 message count, then id, JSON for each message, then
-- history_max_bytes, then the last event's ID and the log's records (see
-- close_log).
-- Returns NOTFOUND | LOCKLOST | OK.
-- Every commit records its call ID as the thread's last_commit: when ARGV
-- token no longer holds the lock because a first run of this call committed
-- and released it, the repeat answers OK and writes nothing. A later commit
-- overwrites last_commit, so a repeat that arrives only after another turn
-- has begun and committed answers LOCKLOST; go-redis re-sends after a short
-- backoff, well before a whole turn can run in between. A second CommitTurn
-- call with the same token has a new call ID and gets LOCKLOST, so its
-- messages are never reported kept while dropped.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOTFOUND'} end
local held = redis.call('GET', KEYS[2])
if not held or lock_token(held) ~= ARGV[1] then
  if redis.call('HGET', KEYS[1], 'last_commit') == ARGV[12] then return {'OK'} end
  return {'LOCKLOST'}
end

local n = tonumber(ARGV[15])
local fields = {'updated', ARGV[2], 'last_commit', ARGV[12]}
if n > 0 then
  local ids, datas = {}, {}
  for i = 0, n - 1 do
    ids[#ids + 1], datas[#datas + 1] = ARGV[16 + 2 * i], ARGV[17 + 2 * i]
  end
  hist_append(KEYS[1], KEYS[4], KEYS[5], KEYS[10], ids, datas, tonumber(ARGV[3]), tonumber(ARGV[16 + 2 * n]), fields)
else
  redis.call('HSET', KEYS[1], unpack(fields))
end
if ARGV[5] ~= '' then
  if redis.call('HGET', KEYS[3], 'id') == ARGV[5] then redis.call('DEL', KEYS[3]) end
  redis.call('HSET', KEYS[6], ARGV[5], 'consumed')
end
if ARGV[6] ~= '' then
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'id', ARGV[6], 'data', ARGV[7])
  -- The pending state never outlives its thread.
  redis.call('PEXPIREAT', KEYS[3], math.min(tonumber(ARGV[8]), now_ms() + tonumber(ARGV[4])))
  redis.call('HSET', KEYS[6], ARGV[6], 'issued')
end
if ARGV[9] ~= '' then
  -- Idempotency records are swept and their keys' lives extended when one
  -- is added: a record only matters for IdempotencyTTL after it is written,
  -- and a thread that stops sending keys keeps what it has until then at
  -- most, so its other turns need not touch them.
  local now = now_ms()
  local expired = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', now)
  if #expired > 0 then
    hdel_all(KEYS[7], expired)
    redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
  end
  redis.call('HSET', KEYS[7], ARGV[9], ARGV[10])
  redis.call('ZADD', KEYS[8], now + tonumber(ARGV[11]), ARGV[9])
  local keep = math.max(tonumber(ARGV[4]), tonumber(ARGV[11]))
  redis.call('PEXPIRE', KEYS[7], keep)
  redis.call('PEXPIRE', KEYS[8], keep)
end
if ARGV[13] ~= '' then redis.call('HSETNX', KEYS[1], 'preview', ARGV[13]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[10], ARGV[4])
redis.call('PEXPIRE', KEYS[6], ARGV[4])
if ARGV[14] ~= '0' then close_log(KEYS[9], 17 + 2 * n, ARGV[14]) end
redis.call('DEL', KEYS[2])
return {'OK'}
