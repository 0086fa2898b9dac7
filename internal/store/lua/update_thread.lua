-- Writes a thread's new metadata and title, if its metadata is still as it
-- was read.
-- Returns NOTFOUND | CHANGED (the metadata changed since it was read)
-- | OK + thread.
local thread_key = KEYS[1]
local lock_key = KEYS[2]
local principal = ARGV[1]
local metadata_read = ARGV[2]
local metadata = ARGV[3]      -- '' for none
local set_title = ARGV[4]     -- 1 to set the title, 0 to keep it
local title = ARGV[5]
local has_title = ARGV[6]     -- 0: clear the title
local updated = ARGV[7]
local thread_ttl_ms = ARGV[8]

local t = owned_thread(thread_key, principal)
if not t then return {'NOTFOUND'} end
if (t[6] or '') ~= metadata_read then return {'CHANGED'} end
if metadata == '' then
  redis.call('HDEL', thread_key, 'metadata')
else
  redis.call('HSET', thread_key, 'metadata', metadata)
end
if set_title == '1' then
  if has_title == '1' then redis.call('HSET', thread_key, 'title', title) else redis.call('HDEL', thread_key, 'title') end
end
redis.call('HSET', thread_key, 'updated', updated)
redis.call('PEXPIRE', thread_key, thread_ttl_ms)
touch_files(thread_key, thread_ttl_ms)
return thread_reply({'OK'}, owned_thread(thread_key, principal), lock_key)
