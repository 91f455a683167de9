-- Deletes every record of a key (each of its secrets), then the set of its secrets.
for _, h in ipairs(redis.call('SMEMBERS', secrets)) do redis.call('DEL', recordPrefix .. h) end
redis.call('DEL', secrets)
return 1
