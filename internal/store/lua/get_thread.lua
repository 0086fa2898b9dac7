-- Reads a thread the principal owns.
-- Returns NOTFOUND | OK + thread (9 fields, see thread_reply) + the head's
-- ID ('' for none) + pending JSON or nil.
local thread_key = KEYS[1]
local pending_key = KEYS[2]
local lock_key = KEYS[3]
local msgs_key = KEYS[4]
local msgdata_key = KEYS[5]
local history_key = KEYS[6]
local tree_key = KEYS[7]
local principal = ARGV[1]

local t = owned_thread(thread_key, principal)
if not t then return {'NOTFOUND'} end
local out = thread_reply({'OK'}, t, lock_key)
out[#out + 1] = tree_head_id(thread_key, msgs_key, msgdata_key, history_key, tree_key)
out[#out + 1] = redis.call('HGET', pending_key, 'data')
return out
