-- Renews only the holder's own, current lease.
if redis.call('GET', lease) ~= token then return 0 end
if redis.call('GET', fence) ~= token then return 0 end
redis.call('PEXPIRE', lease, ttlMs)
return 1
