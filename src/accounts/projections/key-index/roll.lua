-- The new secret gets a copy of the current record; the previous one is dropped (no grace, atOnce
-- '1') or expires at the end of the grace period. Nothing happens for a key that is already gone.
local rec = redis.call('HGETALL', previousRecord)
if #rec == 0 then return 0 end
redis.call('HSET', newRecord, unpack(rec))
redis.call('HDEL', newRecord, fieldRolledAway)
redis.call('SADD', secrets, newHash)
if atOnce == '1' then
  redis.call('DEL', previousRecord)
  redis.call('SREM', secrets, previousHash)
else
  redis.call('HSET', previousRecord, fieldExpiresAt, validUntil, fieldRolledAway, '1')
  redis.call('PEXPIREAT', previousRecord, keptUntilMs)
  redis.call('SADD', secrets, previousHash)
end
return 1
