-- Releases the lock only if it is still this rebuild's.
local v = redis.call('GET', lock)
if v and cjson.decode(v).generation == token then redis.call('DEL', lock) end
return 0
