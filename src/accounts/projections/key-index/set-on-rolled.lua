-- A field set on every live record of a rolled key (only those that still exist).
for _, h in ipairs(redis.call('SMEMBERS', secrets)) do
  local k = recordPrefix .. h
  if redis.call('EXISTS', k) == 1 then redis.call('HSET', k, field, value) end
end
return 1
