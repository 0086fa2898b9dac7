-- Lists a new thread in its owner's index when the index holds fewer than
-- max_threads (or holds it already: a re-sent call). Counting and listing
-- in one script is what keeps creates that race at the quota from all
-- passing.
-- Returns OK | FULL + a sample of listed thread IDs with their scores,
-- which may be dead (the caller checks them): the `sample` oldest, which
-- are the first to expire, then `sample` chosen at random, which find in
-- time a thread deleted by an instance that died before unlisting it. A
-- refusal costs the same however many threads the index lists.
local index_key = KEYS[1]
local max_threads = ARGV[1]
local thread_id = ARGV[2]
local score = ARGV[3]
local ttl_ms = ARGV[4]
local sample = ARGV[5]

if not redis.call('ZSCORE', index_key, thread_id) then
  if redis.call('ZCARD', index_key) >= tonumber(max_threads) then
    local out = append_all({'FULL'}, redis.call('ZRANGE', index_key, 0, tonumber(sample) - 1, 'WITHSCORES'))
    return append_all(out, redis.call('ZRANDMEMBER', index_key, sample, 'WITHSCORES'))
  end
  redis.call('ZADD', index_key, score, thread_id)
end
redis.call('PEXPIRE', index_key, ttl_ms)
return {'OK'}
