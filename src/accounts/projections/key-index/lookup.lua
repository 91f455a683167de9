-- One round trip: resolve the active generation and read the record.
local gen = redis.call('GET', active) or '0'
return redis.call('HGETALL', recordPrefix .. gen .. recordInfix .. keyHash)
