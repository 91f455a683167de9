-- INCRBY's reply reaches Lua as a double: exact below 2^53 in size, written with %d (a GET per money
-- event was a third of this script's calls); beyond, the stored decimal string. The entry is
-- head .. balance .. tail (its JSON, the balance spliced in).
local b = redis.call('INCRBY', balance, amount)
if b < 9007199254740992 and b > -9007199254740992 then b = string.format('%d', b) else b = redis.call('GET', balance) end
return redis.call('RPUSH', entries, head .. b .. tail)
