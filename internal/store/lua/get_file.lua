-- Reads a file of a thread the principal owns: its record and, when asked,
-- its pieces in order.
-- Returns NOTFOUND | OK + record + pieces.
local thread_key = KEYS[1]
local file_key = KEYS[2]
local principal = ARGV[1]
local with_data = ARGV[2]   -- 1: the pieces too

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
local f = redis.call('HMGET', file_key, 'r', 'n')
if not f[1] then return {'NOTFOUND'} end
local out = {'OK', f[1]}
if with_data == '1' then
  for i = 0, tonumber(f[2]) - 1 do out[#out + 1] = redis.call('HGET', file_key, tostring(i)) end
end
return out
