-- kind 'threshold' (value: the threshold, '' for none) or 'delta' (value: the signed change of the
-- balance, eventId: the event that may cross).
-- Exact comparison of integer strings (no leading zeros): Lua numbers are doubles, nano-USD are not.
if kind == 'threshold' then
  if value == '' then redis.call('HDEL', state, 'threshold') else redis.call('HSET', state, 'threshold', value) end
  return
end
-- Balance and threshold in one read; without a threshold (most workspaces) nothing else is read.
local read = redis.call('HMGET', state, 'balance', 'threshold')
redis.call('HINCRBY', state, 'balance', value)
local t = read[2]
if not t then return end
local function cmp(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na and -1 or 1 end
  local x, y = na and a:sub(2) or a, nb and b:sub(2) or b
  local r = 0
  if #x ~= #y then r = (#x < #y) and -1 or 1 elseif x ~= y then r = (x < y) and -1 or 1 end
  return na and -r or r
end
local before = read[1] or '0'
local after = redis.call('HGET', state, 'balance')
if cmp(before, t) >= 0 and cmp(after, t) < 0 then
  redis.call('HSET', crossings, eventId, t .. ':' .. after)
end
