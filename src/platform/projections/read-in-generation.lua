-- The reads only while `gen` is the active generation; the active generation first either way. The
-- reads follow the named arguments: per read its argument count, then the command and its arguments.
local current = redis.call('GET', active) or '0'
if current ~= gen then return {current} end
local out = {current}
local i = restFrom
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  out[#out + 1] = redis.call(unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return out
