-- Frees files from their principal's quota (see reserve_file.lua); a file
-- not counted is skipped.
-- Returns OK.
local quota_key = KEYS[1]
-- ARGV[1…]: the files' fields, "<thread ID>/<file ID>".

for i = 1, #ARGV do
  local size = redis.call('HGET', quota_key, ARGV[i])
  if size then
    redis.call('HDEL', quota_key, ARGV[i])
    redis.call('HINCRBY', quota_key, 'total', -tonumber(size))
  end
end
return {'OK'}
