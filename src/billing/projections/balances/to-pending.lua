-- The hold becomes the settled cost (pending until the projector's RELEASE drops it). Idempotent and
-- race-free: nothing happens when the hold is gone (the projector got there first, or the sweeper);
-- run twice, the second run replaces the cost by itself. The request stays in resv-open.
local amt = redis.call('HGET', held, requestId)
if not amt then return 0 end
redis.call('HSET', held, requestId, cost)
redis.call('DECRBY', total, amt)
redis.call('INCRBY', total, cost)
for _, share in ipairs({{owner, keyTotalPrefix}, {member, memberTotalPrefix}}) do
  local who = redis.call('HGET', share[1], requestId)
  if who then
    redis.call('DECRBY', share[2] .. who, amt)
    redis.call('INCRBY', share[2] .. who, cost)
  end
end
return 1
