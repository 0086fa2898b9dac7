-- KEYS thread; ARGV owner, processor, created, updated, ttl_ms,
-- call id. Returns EXISTS | OK. A thread holding this call's ID was written
-- by a first run of this call whose reply was lost.
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'create_call') == ARGV[6] then return {'OK'} end
  return {'EXISTS'}
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'processor', ARGV[2], 'created', ARGV[3], 'updated', ARGV[4], 'seq', 0,
  'create_call', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {'OK'}
