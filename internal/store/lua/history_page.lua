-- Reads a page of one branch of a thread's history: the newest limit
-- messages of the branch ending at leaf ('' for the head's), or of the
-- branch of before and older than it.
-- Returns NOTFOUND | BADCURSOR | OK, more (0|1), the ID of the oldest
-- message's parent ('' when not stored), the number n of messages, their n
-- siblings ("<index>|<id>,…" or ''), then the page's messages oldest first.
local thread_key = KEYS[1]
local msgs_key = KEYS[2]
local msgdata_key = KEYS[3]
local history_key = KEYS[4]
local tree_key = KEYS[5]
local principal = ARGV[1]
local limit = ARGV[2]
local before = ARGV[3]
local leaf = ARGV[4]

if not owned_thread(thread_key, principal) then return {'NOTFOUND'} end
local more, parent_id, sibs, page = tree_page(thread_key, msgs_key, msgdata_key, history_key, tree_key, tonumber(limit), before, leaf)
if not more then return {'BADCURSOR'} end
local out = {'OK', more, parent_id, #sibs}
append_all(out, sibs)
return append_all(out, page)
