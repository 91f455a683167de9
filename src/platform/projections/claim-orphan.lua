-- Claims a generation for deletion if no rebuild holds it and no reader uses it.
if redis.call('SISMEMBER', building, gen) == 0 then return 0 end
local v = redis.call('GET', lock)
if v and cjson.decode(v).generation == gen then return 0 end
if (redis.call('GET', active) or '0') == gen then redis.call('SREM', building, gen) return 0 end
redis.call('SREM', building, gen)
if redis.call('GET', pending) == gen then redis.call('DEL', pending) end
return 1
