-- KEYS thread, turn events, lock; ARGV 1 principal,
-- 2 after, 3 turn id, 4 events_ttl_ms.
-- Returns NOTFOUND | NOTURN | OK + the log's kind + strings of records:
-- for a string log, the whole log (its turn has ended); for a stream, the
-- last entry's records (whose last event says whether the turn has ended)
-- and then those of every entry holding events after ARGV after. Reading a
-- running turn's log makes it a stream, so that the reader can wait for
-- what follows.
if not owned_thread(KEYS[1], ARGV[1]) then return {'NOTFOUND'} end
local kind = open_log(KEYS[2], KEYS[3], ARGV[3], tonumber(ARGV[4]))
if kind == 'none' then return {'NOTURN'} end
if kind == 'string' then return {'OK', kind, redis.call('GET', KEYS[2])} end
-- entry_records is a stream entry's records; an entry written before events
-- were kept as records has a field "<id> <name>" per event, with its data.
local function entry_records(f)
  if f[1] == 'r' then return f[2] end
  local out = {}
  for i = 1, #f - 1, 2 do out[#out + 1] = f[i] .. ' ' .. #f[i + 1] .. '\n' .. f[i + 1] end
  return table.concat(out)
end
local out = {'OK', kind, ''}
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #top > 0 then out[3] = entry_records(top[1][2]) end
for _, e in ipairs(redis.call('XRANGE', KEYS[2], '(0-' .. ARGV[2], '+')) do
  out[#out + 1] = entry_records(e[2])
end
return out
