-- A turn's events are kept as records, "<id> <name> <data length>\n<data>"
-- each ("<id> <name> <data length> last\n<data>" for the turn's last event),
-- written by chatd (appendRecord) and read back by it (parseLog): Lua passes
-- them along whole, since every call into Lua's string library costs a
-- script more than copying the bytes.
--
-- A turn's log is a stream while it runs and something needs more than its
-- first event (an append of streamed events, or a reader waiting for the
-- rest), so that readers can wait on it with XREAD; until then the first
-- event's record lives in the lock. A turn that ends with no stream (one
-- answered as one body that no one followed) writes its whole log at once,
-- as one string of records: a SET costs Redis a fraction of creating a
-- stream.

-- add_events appends a batch of events to a turn's stream: records, whose
-- last event's ID is last_id, kept as one entry "0-<last_id>" with the
-- field r. Entry IDs only grow, so a re-sent batch is refused by XADD and
-- skipped; readers skip any event they already passed.
local function add_events(key, last_id, records)
  if records == '' then return end
  redis.pcall('XADD', key, '0-' .. last_id, 'r', records)
end

-- open_log makes turn's log at logkey a stream if it is not one yet and the
-- turn still holds the lock, starting it with the turn's first event and
-- making it live extra_ms past the lock. It returns the log's type: stream,
-- string (the turn ended) or none (no such turn, or it ended long ago).
local function open_log(logkey, lockkey, turn, extra_ms)
  local kind = redis.call('TYPE', logkey)['ok']
  if kind ~= 'none' then return kind end
  local held = redis.call('GET', lockkey)
  if not held then return 'none' end
  local _, _, id, _, _, _, first = lock_parts(held)
  if id ~= turn or first == '' then return 'none' end
  redis.call('XADD', logkey, '0-' .. string.sub(first, 1, string.find(first, ' ', 1, true) - 1), 'r', first)
  redis.call('PEXPIRE', logkey, redis.call('PTTL', lockkey) + extra_ms)
  return 'stream'
end

-- close_log ends a turn's log with its last events and makes the log live
-- ttl_ms. last_id is the last event's ID (0: there is none) and records the
-- whole log as records, the first event's then the last events'. A log that
-- is still only its first event, kept in the lock, is written whole as one
-- string, just as chatd sent it: joined in Lua, every byte would be hashed
-- again, and an APPEND would leave the log holding twice its size for its
-- whole life (Redis grows an appended string to double). A log that is a
-- stream takes the records as its last entry, the first event's included:
-- readers skip an event they already have, and cutting it off would hash
-- the rest again.
local function close_log(logkey, last_id, records, ttl_ms)
  if last_id == '0' then
    -- A turn that ends with no last event keeps no log: its readers learn
    -- it is gone.
    redis.call('DEL', logkey)
    return
  end
  if redis.call('SET', logkey, records, 'PX', ttl_ms, 'NX') then return end
  add_events(logkey, last_id, records)
  redis.call('PEXPIRE', logkey, ttl_ms)
end
