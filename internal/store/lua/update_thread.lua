-- Writes a thread's new metadata and title, if its metadata is still as it
-- was read.
-- and its head, when asked, to the latest descendant of a message.
-- Returns NOTFOUND | CHANGED (the metadata changed since it was read)
-- | NOMESSAGE (the head names a message the history does not hold;
-- nothing written) | OK + thread + the head's ID.
local thread_key = KEYS[1]
local lock_key = KEYS[2]
local msgs_key = KEYS[3]
local msgdata_key = KEYS[4]
local history_key = KEYS[5]
local tree_key = KEYS[6]
local principal = ARGV[1]
local metadata_read = ARGV[2]
local metadata = ARGV[3]      -- '' for none
local set_title = ARGV[4]     -- 1 to set the title, 0 to keep it
local title = ARGV[5]
local has_title = ARGV[6]     -- 0: clear the title
local updated = ARGV[7]
local thread_ttl_ms = ARGV[8]
local head = ARGV[9]          -- '' to keep the head

local t = owned_thread(thread_key, principal)
if not t then return {'NOTFOUND'} end
if (t[6] or '') ~= metadata_read then return {'CHANGED'} end
if head ~= '' and not tree_set_head(thread_key, msgs_key, msgdata_key, history_key, tree_key, head, thread_ttl_ms) then
  return {'NOMESSAGE'}
end
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
local out = thread_reply({'OK'}, owned_thread(thread_key, principal), lock_key)
out[#out + 1] = tree_head_id(thread_key, msgs_key, msgdata_key, history_key, tree_key)
return out
