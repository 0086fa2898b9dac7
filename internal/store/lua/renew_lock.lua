-- Extends a running turn's lease, and its event log with it, only while the
-- token still holds the lock: a lease that lapsed and was taken over stays
-- lost.
-- Returns LOCKLOST | OK.
local lock_key = KEYS[1]
local log_key = KEYS[2]
local token = ARGV[1]
local lease_ms = ARGV[2]
local events_ttl_ms = ARGV[3]

local held = redis.call('GET', lock_key)
if not held then return {'LOCKLOST'} end
if lock_token(held) ~= token then return {'LOCKLOST'} end
redis.call('PEXPIRE', lock_key, lease_ms)
if redis.call('EXISTS', log_key) == 1 then
  redis.call('PEXPIRE', log_key, tonumber(lease_ms) + tonumber(events_ttl_ms))
end
return {'OK'}
