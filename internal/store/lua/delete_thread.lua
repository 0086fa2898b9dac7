-- Deletes a thread the principal owns, with every key it has.
-- Returns NOTFOUND | OK.
local thread_key = KEYS[1]
-- KEYS[2…]: the thread's other keys.
local principal = ARGV[1]

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
redis.call('DEL', unpack(KEYS))
return {'OK'}
