-- A thread's turn lock, as one string value.

-- The lock's value is "<token>|<claimed elicitation id>|<turn id>|<started
-- ms>|<request fingerprint>|<length of the first event>|<the turn's first
-- event as a log record><idempotency field>": the claim is empty for a
-- plain turn, so a claim lives and dies with its lock, and the rest say
-- which turn runs and how it began. The first event and the idempotency
-- field come last, delimited by length, because they may hold '|'. A lock
-- written before the first event was kept in it has the idempotency field
-- where the length is (never a number: it holds ':').
local function lock_parts(v)
  -- One match for the current format: each call into Lua's string library
  -- costs a script more than the matching does.
  local token, claim, turn, started, fingerprint, n, at =
    string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(%d+)|()')
  if token then
    n = tonumber(n)
    return token, claim, turn, started, fingerprint, string.sub(v, at + n), string.sub(v, at, at + n - 1)
  end
  local parts = {}
  local start = 1
  for i = 1, 6 do
    local sep = string.find(v, '|', start, true)
    if sep then
      parts[i] = string.sub(v, start, sep - 1)
      start = sep + 1
    else
      parts[i] = string.sub(v, start)
      start = #v + 1
    end
  end
  local n = tonumber(parts[6])
  if not n then
    return parts[1], parts[2], parts[3], parts[4], parts[5], parts[6] .. (start <= #v and '|' .. string.sub(v, start) or ''), ''
  end
  return parts[1], parts[2], parts[3], parts[4], parts[5], string.sub(v, start + n), string.sub(v, start, start + n - 1)
end

-- lock_token is a lock's token alone, all a commit, release or renewal
-- reads of it: every capture is a string Lua makes, and hashes, byte by
-- byte.
local function lock_token(v) return string.match(v, '^[^|]*') end

-- lock_value is a lock's value; first is the turn's first event's record
-- with its length before it, "<length>|<record>" (see lockRecord).
local function lock_value(token, claim, turn, started, fingerprint, idem, first)
  return token .. '|' .. claim .. '|' .. turn .. '|' .. started .. '|' .. fingerprint .. '|' .. first .. idem
end
