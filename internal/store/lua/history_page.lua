-- KEYS thread, msgs, msgdata, history; ARGV principal, limit,
-- before. Returns NOTFOUND | BADCURSOR | OK, more (0|1), page messages
-- oldest first.
if not owned_thread(KEYS[1], ARGV[1]) then return {'NOTFOUND'} end
local more, page = hist_page(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[2]), ARGV[3])
if not more then return {'BADCURSOR'} end
return append_all({'OK', more}, page)
