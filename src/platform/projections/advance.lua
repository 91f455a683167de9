-- From restFrom on: `projections` × (pointer key, generation, checkpoint key, checkpoint), then the
-- checkpoint keys to move. Moves them only while the fence holds the token (else -1) and every
-- pointer and checkpoint is still what the runner holds (else 0), then publishes the progress.
if fence ~= '' and redis.call('GET', fence) ~= token then return -1 end
local n = tonumber(projections)
for i = restFrom, restFrom - 1 + 4 * n, 4 do
  if (redis.call('GET', ARGV[i]) or '0') ~= ARGV[i + 1] then return 0 end
  if (redis.call('GET', ARGV[i + 2]) or '0') ~= ARGV[i + 3] then return 0 end
end
for i = restFrom + 4 * n, #ARGV do redis.call('SET', ARGV[i], checkpoint) end
redis.call('PUBLISH', progressChannel, progress)
return 1
