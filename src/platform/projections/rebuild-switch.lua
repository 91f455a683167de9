-- Used when no live runner took the generation over. Switches only while this rebuild holds the lock
-- (fencing) and, unless forced, only if the live generation is not ahead of ours: readers never go
-- back in time.
local v = redis.call('GET', lock)
if not v or cjson.decode(v).generation ~= token then return {-1, ''} end
local prev = redis.call('GET', active) or '0'
local live = redis.call('GET', genPrefix .. prev .. ':__checkpoint') or '0'
local ours = checkpoint
local ahead = #live > #ours or (#live == #ours and live > ours)
if ahead and force ~= '1' then return {0, live} end
redis.call('SET', active, token)
redis.call('SREM', building, token)
redis.call('DEL', pending)
return {1, prev}
