-- Per projection, from restFrom on: pointer key, generation, checkpoint key, checkpoint, ready key.
-- Sets the ready markers only if every pointer and checkpoint is still what the runner holds.
for i = restFrom, #ARGV, 5 do
  if (redis.call('GET', ARGV[i]) or '0') ~= ARGV[i + 1] then return 0 end
  if (redis.call('GET', ARGV[i + 2]) or '0') ~= ARGV[i + 3] then return 0 end
end
for i = restFrom, #ARGV, 5 do redis.call('SET', ARGV[i + 4], ARGV[i + 3]) end
return 1
