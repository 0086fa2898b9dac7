-- Reads a page of a thread's history: the newest limit messages before the
-- message before ('' for the newest).
-- Returns NOTFOUND | BADCURSOR | OK, more (0|1), page messages oldest first.
local thread_key = KEYS[1]
local msgs_key = KEYS[2]
local msgdata_key = KEYS[3]
local history_key = KEYS[4]
local principal = ARGV[1]
local limit = ARGV[2]
local before = ARGV[3]

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
local more, page = hist_page(thread_key, msgs_key, msgdata_key, history_key, tonumber(limit), before)
if not more then return {'BADCURSOR'} end
return append_all({'OK', more}, page)
