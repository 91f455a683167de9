-- The reads only while `gen` is the active generation; the active generation first either way. The
-- reads follow the named arguments: per read its argument count, then the command and its arguments.
-- With `ifFirst` ('1'), the other reads are made only when the first one's reply is not nil (a key's
-- budget that is not set makes the reads of its period and spend pointless): else only it is returned.
local current = redis.call('GET', active) or '0'
if current ~= gen then return {current} end
local out = {current}
local i = restFrom
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local reply = redis.call(unpack(ARGV, i + 1, i + n))
  if reply == false and ifFirst == '1' and i == restFrom then return out end
  out[#out + 1] = reply
  i = i + n + 1
end
return out
