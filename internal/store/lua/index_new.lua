-- KEYS a principal's thread index; ARGV 1 max threads,
-- 2 thread id, 3 score (updated, ms), 4 ttl_ms. Lists the thread when the
-- index holds fewer than max (or holds it already: a re-sent call) and
-- returns OK; else returns FULL + every listed thread ID and its score (some
-- may be dead: the caller checks them). Counting and listing in one script
-- is what keeps creates that race at the quota from all passing.
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
    return append_all({'FULL'}, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'))
  end
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'OK'}
