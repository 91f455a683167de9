-- The hold becomes the settled cost (pending until the projector's RELEASE drops it). Idempotent and
-- race-free: nothing happens when the hold is gone (the projector got there first, or the sweeper);
-- run twice, the second run replaces the cost by itself. The request stays in resv-open.
-- The holds hash is the workspace's (./reserve.inc.lua): the request's field
-- "amount[\0keyId[\0userId]]" and the sums '=total', '=k:…', '=m:…'.
local record = redis.call('HGET', held, requestId)
if not record then return 0 end
local amt, rest = record, ''
local z = string.find(record, '\0', 1, true)
if z then amt, rest = string.sub(record, 1, z - 1), string.sub(record, z) end
redis.call('HSET', held, requestId, cost .. rest)
-- Each sum moves by cost − hold: one HINCRBY when both are below 2^52 (a double subtracts them
-- exactly; '%d' writes the result), else one HINCRBY of −hold and one of the cost (exact strings).
local a, c = tonumber(amt), tonumber(cost)
local delta
if a and c and a < 4503599627370496 and c < 4503599627370496 then delta = string.format('%d', c - a) end
local function move(field)
  if delta then
    if delta ~= '0' then redis.call('HINCRBY', held, field, delta) end
  else
    if amt ~= '0' then redis.call('HINCRBY', held, field, '-' .. amt) end
    redis.call('HINCRBY', held, field, cost)
  end
end
move('=total')
if rest ~= '' then
  rest = string.sub(rest, 2)
  local z2 = string.find(rest, '\0', 1, true)
  if z2 then
    move('=k:' .. string.sub(rest, 1, z2 - 1))
    move('=m:' .. string.sub(rest, z2 + 1))
  else
    move('=k:' .. rest)
  end
end
return 1
