-- From restFrom on, per projection: pointer key, generation, checkpoint key, checkpoint. Run right
-- after a WATCH of every key it reads and the guard, and right before the batch's MULTI: on any
-- difference it writes the guard (SET then DEL, so nothing is left), which makes the EXEC of this
-- connection's MULTI fail; -1 for the fence, 0 for a pointer or checkpoint, 1 when all hold. pcall:
-- a read that fails (a key of another type) counts as a difference instead of failing the script,
-- which would leave the EXEC unguarded.
local r = 1
if fence ~= '' and redis.pcall('GET', fence) ~= token then r = -1 end
if r == 1 then
  for i = restFrom, #ARGV, 4 do
    if (redis.pcall('GET', ARGV[i]) or '0') ~= ARGV[i + 1] or (redis.pcall('GET', ARGV[i + 2]) or '0') ~= ARGV[i + 3] then r = 0 break end
  end
end
if r ~= 1 then
  redis.call('SET', guard, '1')
  redis.call('DEL', guard)
end
return r
