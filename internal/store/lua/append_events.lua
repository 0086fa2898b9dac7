-- KEYS turn events, lock; ARGV 1 turn id, 2
-- events_ttl_ms, 3 the last event's ID, 4 the events' records. The log
-- of a turn that no longer runs takes nothing.
if open_log(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])) == 'stream' then add_events(KEYS[1], 3) end
return {'OK'}
