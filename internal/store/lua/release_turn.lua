-- KEYS lock, turn events; ARGV 1 token, 2 events_ttl_ms (0:
-- no turn log), 3 the last event's ID, 4 the log's records (see close_log).
-- Returns LOCKLOST | OK.
-- A repeat after a successful first run answers LOCKLOST: the state is the
-- same (the lock is gone, and a lock another turn took since is left alone),
-- and callers ignore a release's error, so no record of releases is kept.
local held = redis.call('GET', KEYS[1])
if not held then return {'LOCKLOST'} end
if lock_token(held) ~= ARGV[1] then return {'LOCKLOST'} end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= '0' then close_log(KEYS[2], 3, ARGV[2]) end
return {'OK'}
