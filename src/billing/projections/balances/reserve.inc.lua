-- reserve(base, wsId, requestId, amount, nowMs, keyId, periods, k): available = balance − open
-- reservations must cover the amount, checked and held here; then every budget the request counts
-- against, so parallel requests never overshoot any of them: the key's (its spend in the key's
-- period + its open reservations + this amount), then its creator's member budget (the spend of all
-- their keys in the member budget's period + their open reservations + this amount). A refusal
-- undoes every hold it made. All arithmetic is Redis's int64 (HINCRBY) and decimal strings: Lua
-- numbers are doubles and would round amounts above 2^53 nano-USD.
--
-- base is the workspace's balances key in the generation the caller names ("{prefix}rm:balances:{gen}:{ws:<wsId>}":
-- the budgets, spend and key owners are keys under it, all in the workspace's slot), keyId '' for none,
-- periods the id of each period now ({daily, weekly, monthly}: src/platform/budget-periods.ts) and
-- k the reservation keys (reservationKeys in ./reservation-keys.ts).
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
-- The workspace's holds are one hash (./reservation-keys.ts): a field per request, "amount" then,
-- NUL-separated, the key and the key's creator it counts against; and the sums, kept as fields
-- beside them and deleted when they reach 0 (so a workspace holding nothing has no hash):
-- '=total', '=k:' .. keyId, '=m:' .. userId.
-- An HINCRBY reply reaches Lua as a double: exact below 2^53 in size (written with '%d'), else the
-- value is read back as a string. Most holds are far below that, so the HGET is spared.
local function exact(key, field, reply)
  if reply > -9007199254740992 and reply < 9007199254740992 then return string.format('%d', reply) end
  return redis.call('HGET', key, field) or '0'
end
-- -a for a decimal string (HINCRBY refuses '-0')
local function negate(a)
  if a == '0' then return a end
  if string.sub(a, 1, 1) == '-' then return string.sub(a, 2) end
  return '-' .. a
end
-- Takes `amount` off a sum and returns what is left; a sum at 0 (or below) leaves the hash.
local function unhold(key, field, amount)
  local left = redis.call('HINCRBY', key, field, negate(amount))
  if left > 0 then return exact(key, field, left) end
  redis.call('HDEL', key, field)
  return '0'
end
-- nil when spend in the budget's period + holds (this one's included) fit the budget, else {budget, spent, period}
-- (heldReply: the HINCRBY that added this hold to the sum in field heldField). When it fits, also
-- {budget, used}: what the answer's remaining-budget header is computed from, at no extra command.
local function over_budget(budgetKey, periodKey, spendKey, held, heldField, heldReply, periods)
  local budget = redis.call('GET', budgetKey)
  if not budget then return nil end
  local period = redis.call('GET', periodKey) or 'monthly'
  local spent = redis.call('HGET', spendKey, periods[period] or periods.monthly) or '0'
  local used = add(spent, exact(held, heldField, heldReply))
  if ge(budget, used) then return nil, {budget, used} end
  return {budget, spent, period}
end
-- a − b for decimal strings a ≥ b ≥ 0
local function sub(a, b)
  local out, borrow, i, j = {}, 0, #a, #b
  while i > 0 do
    local d = tonumber(string.sub(a, i, i)) - borrow - (j > 0 and tonumber(string.sub(b, j, j)) or 0)
    if d < 0 then d, borrow = d + 10, 1 else borrow = 0 end
    table.insert(out, 1, tostring(d))
    i, j = i - 1, j - 1
  end
  local r = string.gsub(table.concat(out), '^0+', '')
  if r == '' then return '0' end
  return r
end
-- The balance at nowMs: the sum of the unexpired grants' remaining amounts. The projection keeps
-- 'balance' = every grant's remaining amount until an expiry is recorded, and 'expiring' (the grants
-- with an expiry and something left, soonest first: ../grants/grant-book.inc.lua) in the same hash;
-- a grant past its expiry whose CreditExpired is not projected yet is taken out here. One HMGET: the
-- list is read further only when its first expiry has passed.
local function spendable(wsKey, nowMs)
  local h = redis.call('HMGET', wsKey, 'balance', 'expiring')
  local balance, list = h[1] or '0', h[2]
  local now = string.format('%013d', tonumber(nowMs))
  if not list or string.sub(list, 1, 13) > now or string.sub(balance, 1, 1) == '-' then return balance end
  local gone = '0'
  for exp, id in string.gmatch(list, '(%d+):(%S+)') do
    if exp > now then break end
    gone = add(gone, redis.call('HGET', wsKey, 'g:' .. id) or '0')
  end
  if ge(gone, balance) then return '0' end
  return sub(balance, gone)
end
local function reserve(base, wsId, requestId, amount, nowMs, keyId, periods, k)
  local h = k.held
  local balance = spendable(base, nowMs)
  local held = exact(h, '=total', redis.call('HINCRBY', h, '=total', amount))
  if not ge(balance, held) then
    return {0, balance, unhold(h, '=total', amount)}
  end
  local kfit, mfit
  local record = amount
  if keyId and keyId ~= '' then
    local keyField = '=k:' .. keyId
    local keyHeld = redis.call('HINCRBY', h, keyField, amount)
    local kb = base .. ':key-budget'
    local refused
    refused, kfit = over_budget(kb .. ':' .. keyId, kb .. '-period:' .. keyId, base .. ':key-spend:' .. keyId, h, keyField, keyHeld, periods)
    if refused then
      local others = unhold(h, keyField, amount)
      return {2, balance, unhold(h, '=total', amount), refused[1], refused[2], others, refused[3]}
    end
    record = amount .. '\0' .. keyId
    local owner = redis.call('GET', base .. ':key-owner:' .. keyId)
    if owner then
      local memberField = '=m:' .. owner
      local memberHeld = redis.call('HINCRBY', h, memberField, amount)
      local m = owner
      refused, mfit = over_budget(base .. ':member-budget:' .. m, base .. ':member-budget-period:' .. m, base .. ':member-spend:' .. m, h, memberField, memberHeld, periods)
      if refused then
        local others = unhold(h, memberField, amount)
        unhold(h, keyField, amount)
        return {3, balance, unhold(h, '=total', amount), refused[1], refused[2], others, refused[3], owner}
      end
      record = record .. '\0' .. owner
    end
  end
  redis.call('HSET', h, requestId, record)
  redis.call('ZADD', k.open, nowMs, wsId .. ':' .. requestId)
  kfit, mfit = kfit or {'', ''}, mfit or {'', ''}
  return {1, balance, held, kfit[1], kfit[2], mfit[1], mfit[2]}
end
