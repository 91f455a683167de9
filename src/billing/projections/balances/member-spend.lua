--@include batch-runtime
-- Adds a debit to its key creator's spend in each period. The owner is read once per key per batch
-- (memo: key-owner keys are only SET by ApiKeyCreated on the batch's MULTI, before this EVAL, so
-- they cannot change during it), and the amounts go through incr(), summed per member and period
-- over the batch (nothing in the EVAL reads member spend).
local owner = memo[keyOwner]
if owner == nil then
  owner = redis.call('GET', keyOwner)
  memo[keyOwner] = owner
end
if not owner then return 0 end
local key = memberSpendPrefix .. owner
incr(key, daily, amount)
incr(key, weekly, amount)
incr(key, monthly, amount)
return 1
