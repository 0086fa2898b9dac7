-- Lists a new thread in its owner's index when the index holds fewer than
-- max_threads (or holds it already: a re-sent call). Counting and listing
-- in one script is what keeps creates that race at the quota from all
-- passing.
-- Returns OK | FULL + every listed thread ID and its score (some may be
-- dead: the caller checks them).
local index_key = KEYS[1]
local max_threads = ARGV[1]
local thread_id = ARGV[2]
local score = ARGV[3]
local ttl_ms = ARGV[4]

if not redis.call('ZSCORE', index_key, thread_id) then
  if redis.call('ZCARD', index_key) >= tonumber(max_threads) then
    return append_all({'FULL'}, redis.call('ZRANGE', index_key, 0, -1, 'WITHSCORES'))
  end
  redis.call('ZADD', index_key, score, thread_id)
end
redis.call('PEXPIRE', index_key, ttl_ms)
return {'OK'}
