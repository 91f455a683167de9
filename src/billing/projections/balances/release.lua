-- Frees a request's hold (and its key's and member's shares of it). Idempotent: a second release
-- (sweeper and projector, a replayed debit) frees nothing. The ZREM is outside `if amt` on purpose:
-- whatever state it finds, the request leaves no trace, so an index entry whose hold Redis lost
-- (eviction, a partial restore) is swept once instead of on every sweep.
local amt = redis.call('HGET', held, requestId)
if amt then
  redis.call('HDEL', held, requestId)
  redis.call('DECRBY', total, amt)
  for _, share in ipairs({{owner, keyTotalPrefix}, {member, memberTotalPrefix}}) do
    local who = redis.call('HGET', share[1], requestId)
    if who then
      redis.call('HDEL', share[1], requestId)
      if redis.call('DECRBY', share[2] .. who, amt) <= 0 then redis.call('DEL', share[2] .. who) end
    end
  end
end
redis.call('ZREM', open, openMember)
return amt
