-- A thread's files: the index chatd:{T}:files (file ID → size) and a key
-- chatd:{T}:file:<id> per file, found from the thread's key.

-- files_prefix is the thread's key prefix "chatd:{T}:", from its record's
-- key "chatd:{T}:thread".
local function files_prefix(thread_key)
  return string.sub(thread_key, 1, #thread_key - #'thread')
end

-- touch_files gives the thread's files the thread's new TTL.
local function touch_files(thread_key, ttl_ms)
  local p = files_prefix(thread_key)
  local ids = redis.call('HKEYS', p .. 'files')
  if #ids == 0 then return end
  redis.call('PEXPIRE', p .. 'files', ttl_ms)
  for _, id in ipairs(ids) do redis.call('PEXPIRE', p .. 'file:' .. id, ttl_ms) end
end

-- drop_files deletes the thread's files and their index, and returns their
-- IDs.
local function drop_files(thread_key)
  local p = files_prefix(thread_key)
  local ids = redis.call('HKEYS', p .. 'files')
  for _, id in ipairs(ids) do redis.call('DEL', p .. 'file:' .. id) end
  redis.call('DEL', p .. 'files')
  return ids
end
