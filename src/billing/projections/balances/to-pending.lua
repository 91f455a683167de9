-- The hold becomes the settled cost (pending until the projector's RELEASE drops it). Idempotent and
-- race-free: nothing happens when the hold is gone (the projector got there first, or the sweeper);
-- run twice, the second run replaces the cost by itself. The request stays in resv-open.
local amt = redis.call('HGET', held, requestId)
if not amt then return 0 end
redis.call('HSET', held, requestId, cost)
-- Each total moves by cost − hold: one INCRBY when both are below 2^52 (a double subtracts them
-- exactly; '%d' writes the result), else a DECRBY and an INCRBY of the exact decimal strings.
local a, c = tonumber(amt), tonumber(cost)
local delta
if a and c and a < 4503599627370496 and c < 4503599627370496 then delta = string.format('%d', c - a) end
local function move(key)
  if delta then
    if delta ~= '0' then redis.call('INCRBY', key, delta) end
  else
    redis.call('DECRBY', key, amt)
    redis.call('INCRBY', key, cost)
  end
end
move(total)
for _, share in ipairs({{owner, keyTotalPrefix}, {member, memberTotalPrefix}}) do
  local who = redis.call('HGET', share[1], requestId)
  if who then move(share[2] .. who) end
end
return 1
