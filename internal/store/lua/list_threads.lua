-- Lists up to count threads of a principal's index after the cursor, most
-- recently updated first (ties by descending ID, the order of
-- ZREVRANGEBYSCORE).
-- Returns OK, then thread ID, score for each.
local index_key = KEYS[1]
local count = ARGV[1]
local cursor_score = ARGV[2]
local cursor_id = ARGV[3]

local n = tonumber(count)
local items
if cursor_score == '' then
  items = redis.call('ZREVRANGEBYSCORE', index_key, '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, n)
else
  local skip = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', index_key, cursor_score, cursor_score)) do
    if id >= cursor_id then skip = skip + 1 end
  end
  items = redis.call('ZREVRANGEBYSCORE', index_key, cursor_score, '-inf', 'WITHSCORES', 'LIMIT', skip, n)
end
return append_all({'OK'}, items)
