-- Ends a begun turn without writing its outcome, and ends its log with its
-- last events. A repeat after a successful first run answers LOCKLOST: the
-- state is the same (the lock is gone, and a lock another turn took since
-- is left alone), and callers ignore a release's error, so no record of
-- releases is kept.
-- Returns LOCKLOST | OK.
local lock_key = KEYS[1]
local log_key = KEYS[2]
local token = ARGV[1]
local events_ttl_ms = ARGV[2] -- 0: the turn keeps no log
local last_event = ARGV[3]    -- see close_log
local log_records = ARGV[4]

local held = redis.call('GET', lock_key)
if not held then return {'LOCKLOST'} end
if lock_token(held) ~= token then return {'LOCKLOST'} end
redis.call('DEL', lock_key)
if events_ttl_ms ~= '0' then close_log(log_key, last_event, log_records, events_ttl_ms) end
return {'OK'}
