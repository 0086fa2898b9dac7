-- Creates a thread, unless one with its ID exists. A thread holding this
-- call's ID was written by a first run of this call whose reply was lost:
-- the repeat answers as the first run did.
-- Returns EXISTS | OK.
local thread_key = KEYS[1]
local owner = ARGV[1]
local processor = ARGV[2]
local created = ARGV[3]
local updated = ARGV[4]
local ttl_ms = ARGV[5]
local call_id = ARGV[6]

if redis.call('EXISTS', thread_key) == 1 then
  if redis.call('HGET', thread_key, 'create_call') == call_id then return {'OK'} end
  return {'EXISTS'}
end
redis.call('HSET', thread_key, 'owner', owner, 'processor', processor, 'created', created, 'updated', updated, 'seq', 0,
  'create_call', call_id)
redis.call('PEXPIRE', thread_key, ttl_ms)
return {'OK'}
