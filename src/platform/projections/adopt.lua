-- Switches to a rebuild's generation the runner has caught up, only if nothing moved meanwhile; -1
-- for an offer whose rebuild is gone (its generation was dropped).
if redis.call('SISMEMBER', building, gen) == 0 then
  if redis.call('GET', pending) == gen then redis.call('DEL', pending) end
  return -1
end
if (redis.call('GET', active) or '0') ~= oldGen then return 0 end
if (redis.call('GET', oldCheckpointKey) or '0') ~= oldCheckpoint then return 0 end
if redis.call('GET', pending) ~= gen then return 0 end
redis.call('SET', active, gen)
redis.call('DEL', pending)
redis.call('SREM', building, gen)
return 1
