-- Returns 1 when the thread exists, else 0.
local thread_key = KEYS[1]

return redis.call('EXISTS', thread_key)
