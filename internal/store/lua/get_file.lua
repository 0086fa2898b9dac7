-- Reads the record of a file of a thread the principal owns (its pieces
-- are read with HGETALL in the same pipeline).
-- Returns NOTFOUND | OK + record.
local thread_key = KEYS[1]
local file_key = KEYS[2]
local principal = ARGV[1]

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
local record = redis.call('HGET', file_key, 'r')
if not record then return {'NOTFOUND'} end
return {'OK', record}
