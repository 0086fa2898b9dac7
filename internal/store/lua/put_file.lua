-- Stores a file of a thread the principal owns: its record and bytes (in
-- pieces, fields 0…n-1) in a key of its own, listed in the thread's file
-- index; both expire with the thread.
-- Returns NOTFOUND | OK.
local thread_key = KEYS[1]
local files_key = KEYS[2]
local file_key = KEYS[3]
local principal = ARGV[1]
local file_id = ARGV[2]
local record = ARGV[3]
local size = ARGV[4]
-- ARGV[5…]: the file's pieces, in order.

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
redis.call('DEL', file_key)
redis.call('HSET', file_key, 'r', record, 'n', #ARGV - 4)
for i = 5, #ARGV do redis.call('HSET', file_key, tostring(i - 5), ARGV[i]) end
redis.call('HSET', files_key, file_id, size)
local ttl = redis.call('PTTL', thread_key)
if ttl > 0 then
  redis.call('PEXPIRE', file_key, ttl)
  redis.call('PEXPIRE', files_key, ttl)
end
return {'OK'}
