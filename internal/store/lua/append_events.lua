-- Appends a batch of events to a running turn's log. The log of a turn that
-- no longer runs takes nothing.
-- Returns OK.
local log_key = KEYS[1]
local lock_key = KEYS[2]
local turn_id = ARGV[1]
local events_ttl_ms = ARGV[2]
local last_event = ARGV[3]    -- see add_events
local records = ARGV[4]

if open_log(log_key, lock_key, turn_id, tonumber(events_ttl_ms)) == 'stream' then
  add_events(log_key, last_event, records)
end
return {'OK'}
