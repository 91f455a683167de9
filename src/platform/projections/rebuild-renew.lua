-- Rewrites the lock only while this rebuild holds it.
local v = redis.call('GET', lock)
if not v or cjson.decode(v).generation ~= token then return 0 end
redis.call('SET', lock, progress, 'PX', ttlMs)
return 1
