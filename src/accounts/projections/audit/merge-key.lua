-- Renames and rolls keep what they do not change: the key's entry merged inside the MULTI ('' keeps
-- the field as it is).
local cur = redis.call('HGET', keys, keyId)
local rec = cur and cjson.decode(cur) or {}
if name ~= '' then rec.name = name end
if last4 ~= '' then rec.last4 = last4 end
redis.call('HSET', keys, keyId, cjson.encode(rec))
return 1
