-- Deletes a thread the principal owns, with every key it has.
-- Returns NOTFOUND | OK + the IDs of the files it deleted.
local thread_key = KEYS[1]
-- KEYS[2…]: the thread's other keys.
local principal = ARGV[1]

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
local files = drop_files(thread_key)
redis.call('DEL', unpack(KEYS))
return {'OK', files}
