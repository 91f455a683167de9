-- A key record read only in the generation that is active now: `record` is the caller's guess at
-- it (named in generation `gen`, from its cache of the pointer). The pointer and the records share
-- the key index's hash tag, so this one script is on one slot. Returns {active} when the guess is
-- stale (the caller asks again in that generation), else {active, the record's HGETALL}: a key
-- deleted after a rebuild switched the generation is never found in the replaced one.
local current = redis.call('GET', active) or '0'
if current ~= gen then return {current} end
return {current, redis.call('HGETALL', record)}
