-- KEYS a thread hash. Returns 1 when it exists, else 0.
return redis.call('EXISTS', KEYS[1])
