-- Lists a file of a thread the principal owns, whose bytes have been
-- written, the last of them by the same pipeline (fields 0…n-1 of the
-- file's key, which until now expires after ThreadTTL): its record goes into the key and the thread's
-- file index, and both get the thread's TTL. For a thread that is not the
-- principal's the bytes are deleted. The bytes are not arguments of the
-- script, which would copy each piece once more inside Redis.
-- Returns NOTFOUND | OK.
local thread_key = KEYS[1]
local files_key = KEYS[2]
local file_key = KEYS[3]
local principal = ARGV[1]
local file_id = ARGV[2]
local record = ARGV[3]
local size = ARGV[4]
local pieces = ARGV[5]

if not owned_thread(thread_key, principal) then
  redis.call('DEL', file_key)
  return {'NOTFOUND'}
end
redis.call('HSET', file_key, 'r', record, 'n', pieces)
redis.call('HSET', files_key, file_id, size)
local ttl = redis.call('PTTL', thread_key)
if ttl > 0 then
  redis.call('PEXPIRE', file_key, ttl)
  redis.call('PEXPIRE', files_key, ttl)
end
return {'OK'}
