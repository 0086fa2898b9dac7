-- KEYS thread, lock; ARGV 1 principal, 2 metadata as
-- read (the CAS guard), 3 new metadata, 4 set title (0|1), 5 title (empty
-- with 6 = 0 clears it), 6 title present (0|1), 7 updated, 8 thread_ttl_ms.
-- Returns NOTFOUND | CHANGED (metadata moved since it was read) | OK + thread.
local t = owned_thread(KEYS[1], ARGV[1])
if not t then return {'NOTFOUND'} end
if (t[6] or '') ~= ARGV[2] then return {'CHANGED'} end
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], 'metadata') else redis.call('HSET', KEYS[1], 'metadata', ARGV[3]) end
if ARGV[4] == '1' then
  if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'title', ARGV[5]) else redis.call('HDEL', KEYS[1], 'title') end
end
redis.call('HSET', KEYS[1], 'updated', ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return thread_reply({'OK'}, owned_thread(KEYS[1], ARGV[1]), KEYS[2])
