-- Drops threads from a principal's index.
-- Returns OK.
local index_key = KEYS[1]
-- ARGV[1…]: the thread IDs.

redis.call('ZREM', index_key, unpack(ARGV))
return {'OK'}
