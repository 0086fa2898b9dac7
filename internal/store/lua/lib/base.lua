-- Helpers of every kind of script: Redis calls that take long argument
-- lists, the server's clock, and joining replies.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- HMGET and HDEL take their fields as arguments; Lua's unpack is bounded by
-- its stack, so long lists go in chunks.
local function hmget_all(key, fields)
  local out = {}
  local i = 1
  while i <= #fields do
    local j = math.min(i + 499, #fields)
    local part = redis.call('HMGET', key, unpack(fields, i, j))
    for k = 1, #part do out[#out + 1] = part[k] end
    i = j + 1
  end
  return out
end

local function hdel_all(key, fields)
  local i = 1
  while i <= #fields do
    local j = math.min(i + 499, #fields)
    redis.call('HDEL', key, unpack(fields, i, j))
    i = j + 1
  end
end

-- append_all appends items to out and returns out.
local function append_all(out, items)
  for i = 1, #items do out[#out + 1] = items[i] end
  return out
end
