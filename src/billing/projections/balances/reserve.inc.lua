-- reserve(base, wsId, requestId, amount, nowMs, keyId, periods, k): available = balance − open
-- reservations must cover the amount, checked and held here; then every budget the request counts
-- against, so parallel requests never overshoot any of them: the key's (its spend in the key's
-- period + its open reservations + this amount), then its creator's member budget (the spend of all
-- their keys in the member budget's period + their open reservations + this amount). A refusal
-- undoes every hold it made. All arithmetic is Redis's int64 (INCRBY) and decimal strings: Lua
-- numbers are doubles and would round amounts above 2^53 nano-USD.
--
-- base is the balances generation's prefix ("{prefix}rm:balances:{gen}"), keyId '' for none,
-- periods the id of each period now ({daily, weekly, monthly}: src/platform/budget-periods.ts) and
-- k the reservation keys (reservation_keys below, or reservationKeys in ./reservation-keys.ts).
-- Returns {1, balance, held, keyBudget, keyUsed, memberBudget, memberUsed} | {0, balance, held}
--       (on success, each budget with its period's spend plus every hold, this one's included; '' without that budget)
--       | {2, balance, held, budget, spent, heldByOthers, period}          (the key's budget refused)
--       | {3, balance, held, budget, spent, heldByOthers, period, userId}  (the member's budget refused)
local function ge(a, b)
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then return nb end
  if na then a, b = string.sub(b, 2), string.sub(a, 2) end
  if #a ~= #b then return #a > #b end
  return a >= b
end
-- a + b for non-negative decimal strings
local function add(a, b)
  local out, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local s = carry + (i > 0 and tonumber(string.sub(a, i, i)) or 0) + (j > 0 and tonumber(string.sub(b, j, j)) or 0)
    table.insert(out, 1, tostring(s % 10))
    carry = math.floor(s / 10)
    i, j = i - 1, j - 1
  end
  local r = string.gsub(table.concat(out), '^0+', '')
  if r == '' then return '0' end
  return r
end
-- An INCRBY/DECRBY reply reaches Lua as a double: exact below 2^53 in size (written with '%d'), else
-- the value is read back as a string. Most holds are far below that, so the GET is spared.
local function exact(key, reply)
  if reply > -9007199254740992 and reply < 9007199254740992 then return string.format('%d', reply) end
  return redis.call('GET', key) or '0'
end
local function unhold(key, amount)
  if redis.call('DECRBY', key, amount) <= 0 then redis.call('DEL', key) end
end
-- nil when spend in the budget's period + holds (this one's included) fit the budget, else {budget, spent, period}
-- (heldReply: the INCRBY that added this hold to heldKey). When it fits, also {budget, used}: what the
-- answer's remaining-budget header is computed from, at no extra command.
local function over_budget(budgetKey, periodKey, spendKey, heldKey, heldReply, periods)
  local budget = redis.call('GET', budgetKey)
  if not budget then return nil end
  local period = redis.call('GET', periodKey) or 'monthly'
  local spent = redis.call('HGET', spendKey, periods[period] or periods.monthly) or '0'
  local used = add(spent, exact(heldKey, heldReply))
  if ge(budget, used) then return nil, {budget, used} end
  return {budget, spent, period}
end
local function reserve(base, wsId, requestId, amount, nowMs, keyId, periods, k)
  local balance = redis.call('HGET', base .. ':ws:' .. wsId, 'balance') or '0'
  local held = exact(k.total, redis.call('INCRBY', k.total, amount))
  if not ge(balance, held) then
    return {0, balance, exact(k.total, redis.call('DECRBY', k.total, amount))}
  end
  local kfit, mfit
  if keyId and keyId ~= '' then
    local keyTotal = k.keyTotalPrefix .. keyId
    local keyHeld = redis.call('INCRBY', keyTotal, amount)
    local kb = base .. ':key-budget'
    local refused
    refused, kfit = over_budget(kb .. ':' .. keyId, kb .. '-period:' .. keyId, base .. ':key-spend:' .. keyId, keyTotal, keyHeld, periods)
    if refused then
      unhold(keyTotal, amount)
      redis.call('DECRBY', k.total, amount)
      return {2, balance, redis.call('GET', k.total), refused[1], refused[2], redis.call('GET', keyTotal) or '0', refused[3]}
    end
    local owner = redis.call('GET', base .. ':key-owner:' .. keyId)
    if owner then
      local memberTotal = k.memberTotalPrefix .. owner
      local memberHeld = redis.call('INCRBY', memberTotal, amount)
      local m = wsId .. ':' .. owner
      refused, mfit = over_budget(base .. ':member-budget:' .. m, base .. ':member-budget-period:' .. m, base .. ':member-spend:' .. m, memberTotal, memberHeld, periods)
      if refused then
        unhold(memberTotal, amount)
        unhold(keyTotal, amount)
        redis.call('DECRBY', k.total, amount)
        return {3, balance, redis.call('GET', k.total), refused[1], refused[2], redis.call('GET', memberTotal) or '0', refused[3], owner}
      end
      redis.call('HSET', k.member, requestId, owner)
    end
    redis.call('HSET', k.owner, requestId, keyId)
  end
  redis.call('HSET', k.held, requestId, amount)
  redis.call('ZADD', k.open, nowMs, wsId .. ':' .. requestId)
  kfit, mfit = kfit or {'', ''}, mfit or {'', ''}
  return {1, balance, held, kfit[1], kfit[2], mfit[1], mfit[2]}
end

-- reservationKeys (./reservation-keys.ts) in Lua, from the shared prefix (REDIS_PREFIX) and a
-- workspace id: the same names.
local function reservation_keys(prefix, wsId)
  return {
    held = prefix .. 'resv:' .. wsId,
    total = prefix .. 'resv-total:' .. wsId,
    open = prefix .. 'resv-open',
    owner = prefix .. 'resv-key:' .. wsId,
    keyTotalPrefix = prefix .. 'resv-key-total:',
    member = prefix .. 'resv-member:' .. wsId,
    memberTotalPrefix = prefix .. 'resv-member-total:' .. wsId .. ':',
  }
end
