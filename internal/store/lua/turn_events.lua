-- Reads a turn's log. Reading a running turn's log makes it a stream, so
-- that the reader can wait for what follows.
-- Returns NOTFOUND | NOTURN | OK + the log's kind + strings of records: for
-- a string log, the whole log (its turn has ended); for a stream, the last
-- entry's records (whose last event says whether the turn has ended) and
-- then those of every entry holding events after the event after.
local thread_key = KEYS[1]
local log_key = KEYS[2]
local lock_key = KEYS[3]
local principal = ARGV[1]
local after = ARGV[2]
local turn_id = ARGV[3]
local events_ttl_ms = ARGV[4]

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
local kind = open_log(log_key, lock_key, turn_id, tonumber(events_ttl_ms))
if kind == 'none' then return {'NOTURN'} end
if kind == 'string' then return {'OK', kind, redis.call('GET', log_key)} end
-- entry_records is a stream entry's records; an entry written before events
-- were kept as records has a field "<id> <name>" per event, with its data.
local function entry_records(f)
  if f[1] == 'r' then return f[2] end
  local out = {}
  for i = 1, #f - 1, 2 do out[#out + 1] = f[i] .. ' ' .. #f[i + 1] .. '\n' .. f[i + 1] end
  return table.concat(out)
end
local out = {'OK', kind, ''}
local top = redis.call('XREVRANGE', log_key, '+', '-', 'COUNT', 1)
if #top > 0 then out[3] = entry_records(top[1][2]) end
for _, e in ipairs(redis.call('XRANGE', log_key, '(0-' .. after, '+')) do
  out[#out + 1] = entry_records(e[2])
end
return out
