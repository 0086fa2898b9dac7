-- A thread's history as a tree, in Redis. Messages keep their positions in
-- commit order (lua/lib/history.lua); the tree hash R beside the history
-- hash H says only what differs from one branch in commit order:
--
--  R "p<pos>"  the position of the message's parent when it is not pos - 1
--              ("0": none, a first message)
--  R "k<pos>"  "<pos>:<id>,…": the children of pos (0: the first messages),
--              oldest first, once one of them is not at pos + 1
--  R "h"       the head's position, when it is not the newest
--
-- A thread without R is one branch, every thread written before branches
-- included, and costs nothing more to read. A branch is read by walking
-- parents back from its leaf, one field read a step where the thread has
-- branches: O(page). Entries of trimmed positions are deleted as they are
-- trimmed; a branch read stops at a trimmed parent.

-- tree_parent is the position of pos's parent (0 for none).
local function tree_parent(r, branched, pos)
  if branched then
    local p = redis.call('HGET', r, 'p' .. pos)
    if p then return tonumber(p) end
  end
  return pos - 1
end

-- tree_id is the ID of the message at kept position pos.
local function tree_id(h, seq, pos)
  return record_id(hist_range(h, seq, pos, pos)[1] or '')
end

-- tree_head is the head's position (0 for an empty history). A head
-- trimmed away gives way to the newest message.
local function tree_head(r, branched, seq, first)
  if branched then
    local p = tonumber(redis.call('HGET', r, 'h'))
    if p and p >= first then return p end
  end
  return seq
end

-- tree_children returns the kept children of pos as a list of positions
-- and a list of IDs, or nil when pos has at most the one at pos + 1.
local function tree_children(r, pos, first)
  local k = redis.call('HGET', r, 'k' .. pos)
  if not k then return nil end
  local ps, ids = {}, {}
  for p, id in string.gmatch(k, '(%d+):([^,]*),') do
    if tonumber(p) >= first then ps[#ps + 1], ids[#ids + 1] = tonumber(p), id end
  end
  return ps, ids
end

-- tree_walk returns up to n positions of the branch ending at leaf, oldest
-- first, with each one's parent position beside it.
local function tree_walk(r, branched, first, leaf, n)
  local ps, parents = {}, {}
  local pos = leaf
  while #ps < n and pos >= first and pos > 0 do
    local parent = tree_parent(r, branched, pos)
    ps[#ps + 1], parents[#parents + 1] = pos, parent
    pos = parent
  end
  local a, b = {}, {}
  for i = #ps, 1, -1 do a[#a + 1], b[#b + 1] = ps[i], parents[i] end
  return a, b
end

-- tree_read returns the JSON of positions ps (ascending), as hist_range
-- does, reading each run of consecutive positions at once.
local function tree_read(h, seq, ps)
  local out = {}
  local i = 1
  while i <= #ps do
    local j = i
    while j < #ps and ps[j + 1] == ps[j] + 1 do j = j + 1 end
    append_all(out, hist_range(h, seq, ps[i], ps[j]))
    i = j + 1
  end
  return out
end

-- tree_open returns the history's seq and first position, whether the
-- thread has branches, and the position a branch ends at: the head's for
-- '-', 0 for '' (none), else that message's, or nil when the history does
-- not hold it.
local function tree_open(t, msgs, msgdata, h, r, leaf)
  local seq, first = hist_open(t, msgs, msgdata, h)
  local branched = redis.call('EXISTS', r) == 1
  local pos = 0
  if leaf == '-' then
    pos = tree_head(r, branched, seq, first)
  elseif leaf ~= '' then
    pos = hist_position(h, seq, first, leaf)
  end
  return seq, first, branched, pos
end

-- tree_window returns the ID of the message a branch ends at ('-': the
-- head's; '' none) and the JSON of its newest n messages, oldest first; nil
-- when the history does not hold that message.
local function tree_window(t, msgs, msgdata, h, r, leaf, n)
  local seq, first, branched, pos = tree_open(t, msgs, msgdata, h, r, leaf)
  if not pos then return nil end
  if pos < first or pos == 0 then return '', {} end
  if n <= 0 then return tree_id(h, seq, pos), {} end
  local ps = tree_walk(r, branched, first, pos, n)
  local recs = tree_read(h, seq, ps)
  local last = recs[#recs]
  -- The last string of a run ends with the leaf's record.
  local id = string.match('\n' .. last, '.*\n({"id":"[^"]*")')
  return string.sub(id, 8, -2), recs
end

-- tree_page returns more (0|1), the ID of the oldest message's stored
-- parent ('' when none), the siblings of each message ("<index>|<id>,…",
-- '' for none) and the JSON of the page: the newest limit messages of the
-- branch ending at leaf ('' the head's), or of the branch of before and
-- older than it when before is set. nil when leaf or before is not held.
local function tree_page(t, msgs, msgdata, h, r, limit, before, leaf)
  local seq, first, branched, pos = tree_open(t, msgs, msgdata, h, r, leaf == '' and '-' or leaf)
  if not pos then return nil end
  if before ~= '' then
    local b = hist_position(h, seq, first, before)
    if not b then return nil end
    pos = tree_parent(r, branched, b)
  end
  local ps, parents = tree_walk(r, branched, first, pos, limit)
  local sibs = {}
  for i = 1, #ps do
    sibs[i] = ''
    if branched then
      local kids, ids = tree_children(r, parents[i], first)
      if kids and #kids > 1 then
        for j = 1, #kids do
          if kids[j] == ps[i] then sibs[i] = (j - 1) .. '|' .. table.concat(ids, ',') end
        end
      end
    end
  end
  local more, parent_id = 0, ''
  if #ps > 0 and parents[1] >= first and parents[1] > 0 then
    more, parent_id = 1, tree_id(h, seq, parents[1])
  end
  return more, parent_id, sibs, tree_read(h, seq, ps)
end

-- tree_link records the parent of the messages a commit appends after
-- position seq (ids[1] the first, each other the child of the one before):
-- parent '-' (the head), '' (none) or a message ID. The commit's last
-- message becomes the head, which is then the newest.
local function tree_link(t, msgs, msgdata, h, r, parent, ids, ttl_ms)
  local seq, first, branched, pp = tree_open(t, msgs, msgdata, h, r, parent)
  pp = pp or 0
  local pos = seq + 1
  if pp ~= pos - 1 then
    redis.call('HSET', r, 'p' .. pos, pp)
    local k = redis.call('HGET', r, 'k' .. pp)
    if not k then
      -- The one child recorded by position alone, if it is kept.
      k = ''
      local d = pp + 1
      if d < pos and d >= first and redis.call('HEXISTS', r, 'p' .. d) == 0 then k = d .. ':' .. tree_id(h, seq, d) .. ',' end
    end
    redis.call('HSET', r, 'k' .. pp, k .. pos .. ':' .. ids[1] .. ',')
    branched = true
  end
  if branched then
    redis.call('HDEL', r, 'h')
    redis.call('PEXPIRE', r, ttl_ms)
  end
  return first
end

-- tree_trim deletes the entries of positions from … to - 1, which the
-- commit trimmed: their parents, and a parent's children once its newest
-- child is trimmed (children are newer than their parent and trimmed
-- oldest first, so none is left).
local function tree_trim(r, from, to)
  if to <= from or redis.call('EXISTS', r) == 0 then return end
  for pos = from, to - 1 do
    local parent = tree_parent(r, true, pos)
    redis.call('HDEL', r, 'p' .. pos)
    local k = redis.call('HGET', r, 'k' .. parent)
    if k and string.match(k, '(%d+):[^,]*,$') == tostring(pos) then redis.call('HDEL', r, 'k' .. parent) end
  end
end

-- tree_latest is the latest descendant of pos: at each level its newest
-- child. O(the depth below pos).
local function tree_latest(r, branched, seq, first, pos)
  if not branched then return seq end
  while true do
    local kids = tree_children(r, pos, first)
    if kids and #kids > 0 then
      pos = kids[#kids]
    elseif pos + 1 <= seq and redis.call('HEXISTS', r, 'p' .. (pos + 1)) == 0 then
      pos = pos + 1
    else
      return pos
    end
  end
end

-- tree_set_head makes the latest descendant of message id the head;
-- false when the history does not hold it.
local function tree_set_head(t, msgs, msgdata, h, r, id, ttl_ms)
  local seq, first, branched, pos = tree_open(t, msgs, msgdata, h, r, id)
  if not pos then return false end
  local head = tree_latest(r, branched, seq, first, pos)
  if head == seq then
    redis.call('HDEL', r, 'h')
  else
    redis.call('HSET', r, 'h', head)
    redis.call('PEXPIRE', r, ttl_ms)
  end
  return true
end

-- tree_head_id is the head's ID, '' for an empty history.
local function tree_head_id(t, msgs, msgdata, h, r)
  local seq, first, _, pos = tree_open(t, msgs, msgdata, h, r, '-')
  if pos < first or pos == 0 then return '' end
  return tree_id(h, seq, pos) or ''
end
