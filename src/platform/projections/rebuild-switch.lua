-- Used when no live runner took the generation over. Switches only while this rebuild holds the lock
-- (fencing) and, unless forced, only if the live generation is not ahead of ours: readers never go
-- back in time. `liveCheckpoint` is the checkpoint key of generation `live`, the one the caller read
-- as active: if another generation is active now, {2, it} and the caller asks again.
local v = redis.call('GET', lock)
if not v or cjson.decode(v).generation ~= token then return {-1, ''} end
local prev = redis.call('GET', active) or '0'
if prev ~= live then return {2, prev} end
local at = redis.call('GET', liveCheckpoint) or '0'
local ours = checkpoint
local ahead = #at > #ours or (#at == #ours and at > ours)
if ahead and force ~= '1' then return {0, at} end
redis.call('SET', active, token)
redis.call('SREM', building, token)
redis.call('DEL', pending)
return {1, prev}
