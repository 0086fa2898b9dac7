-- KEYS lock, turn events; ARGV 1 token, 2 lease_ms,
-- 3 events_ttl_ms. Returns LOCKLOST | OK.
-- The running turn's lease is extended, and its event log with it, only
-- while the token still holds the lock: a lease that lapsed and was taken
-- over stays lost.
local held = redis.call('GET', KEYS[1])
if not held then return {'LOCKLOST'} end
if lock_token(held) ~= ARGV[1] then return {'LOCKLOST'} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[2]) + tonumber(ARGV[3]))
end
return {'OK'}
