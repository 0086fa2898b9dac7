-- KEYS the principal's thread index; ARGV 1 count,
-- 2 cursor score (empty for the first page), 3 cursor thread id.
-- Returns OK, then thread id, score for each of up to count threads after
-- the cursor, most recently updated first (ties by descending id, the
-- order of ZREVRANGEBYSCORE).
local n = tonumber(ARGV[1])
local items
if ARGV[2] == '' then
  items = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, n)
else
  local skip = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[2])) do
    if id >= ARGV[3] then skip = skip + 1 end
  end
  items = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[2], '-inf', 'WITHSCORES', 'LIMIT', skip, n)
end
return append_all({'OK'}, items)
