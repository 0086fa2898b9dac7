-- KEYS a principal's thread index; ARGV thread IDs to drop.
redis.call('ZREM', KEYS[1], unpack(ARGV))
return {'OK'}
