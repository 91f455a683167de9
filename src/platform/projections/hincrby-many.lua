-- ARGV from restFrom on: key, number of fields, then field and delta pairs; repeated per key.
local i, n = restFrom, #ARGV
while i <= n do
  local key, count = ARGV[i], tonumber(ARGV[i + 1])
  i = i + 2
  for _ = 1, count do
    redis.call('HINCRBY', key, ARGV[i], ARGV[i + 1])
    i = i + 2
  end
end
return 1
