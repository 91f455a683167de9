-- Offers the finished generation to the live runner.
local v = redis.call('GET', lock)
if not v or cjson.decode(v).generation ~= token then return 0 end
redis.call('SET', pending, token)
return 1
