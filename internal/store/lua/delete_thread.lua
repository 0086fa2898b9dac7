-- KEYS every key of the thread, the thread hash first;
-- ARGV principal.
if not owned_thread(KEYS[1], ARGV[1]) then return {'NOTFOUND'} end
redis.call('DEL', unpack(KEYS))
return {'OK'}
