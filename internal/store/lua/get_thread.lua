-- KEYS thread, pending, lock; ARGV principal.
-- Returns OK + thread (9 fields, see thread_reply) + pending JSON or nil.
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
local out = thread_reply({'OK'}, t, KEYS[3])
out[#out + 1] = redis.call('HGET', KEYS[2], 'data')
return out
