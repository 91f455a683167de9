-- A failed reload no longer counts against its month's cap: takes its amount off the month it was
-- triggered in (nothing if that reload is unknown). Returns the month.
local m = redis.call('HGET', reloads, reloadId)
if m then redis.call('HINCRBY', months, m, '-' .. amount) end
return m
