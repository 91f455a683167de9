-- Frees a request's hold (and its key's and member's shares of it) in the workspace's holds hash
-- (./reserve.inc.lua: the request's field "amount[\0keyId[\0userId]]", the sums '=total', '=k:…',
-- '=m:…', each deleted at 0). Idempotent: a second release (sweeper and projector, a replayed
-- debit) frees nothing. The ZREM is outside `if record` on purpose: whatever state it finds, the
-- request leaves no trace, so an index entry whose hold Redis lost (eviction, a partial restore) is
-- swept once instead of on every sweep.
local record = redis.call('HGET', held, requestId)
if record then
  local amt, keyId, owner = record, nil, nil
  local z = string.find(record, '\0', 1, true)
  if z then
    amt = string.sub(record, 1, z - 1)
    local rest = string.sub(record, z + 1)
    local z2 = string.find(rest, '\0', 1, true)
    if z2 then keyId, owner = string.sub(rest, 1, z2 - 1), string.sub(rest, z2 + 1) else keyId = rest end
  end
  local minus = amt == '0' and amt or '-' .. amt
  -- The request's field and every sum this takes to 0 go in one HDEL.
  local gone = {requestId}
  local function take(field)
    if redis.call('HINCRBY', held, field, minus) <= 0 then gone[#gone + 1] = field end
  end
  take('=total')
  if keyId then take('=k:' .. keyId) end
  if owner then take('=m:' .. owner) end
  redis.call('HDEL', held, unpack(gone))
  redis.call('ZREM', open, openMember)
  return amt
end
redis.call('ZREM', open, openMember)
return false
