-- Counts a file against its principal's quota: the hash of the principal's
-- files ("<thread ID>/<file ID>" → size) and their total.
-- Returns FULL (the file would take the total over max) | OK.
local quota_key = KEYS[1]
local field = ARGV[1]
local size = ARGV[2]
local max = ARGV[3]
local ttl_ms = ARGV[4]

if redis.call('HEXISTS', quota_key, field) == 1 then return {'OK'} end
local total = tonumber(redis.call('HGET', quota_key, 'total') or '0')
if total + tonumber(size) > tonumber(max) then return {'FULL'} end
redis.call('HSET', quota_key, field, size)
redis.call('HINCRBY', quota_key, 'total', size)
redis.call('PEXPIRE', quota_key, ttl_ms)
return {'OK'}
