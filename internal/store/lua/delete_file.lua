-- Deletes a file of a thread the principal owns.
-- Returns NOTFOUND | OK.
local thread_key = KEYS[1]
local files_key = KEYS[2]
local file_key = KEYS[3]
local principal = ARGV[1]
local file_id = ARGV[2]

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
if redis.call('DEL', file_key) == 0 then return {'NOTFOUND'} end
redis.call('HDEL', files_key, file_id)
return {'OK'}
