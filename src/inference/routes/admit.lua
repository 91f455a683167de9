--@include reserve
-- Admission, one step after another; each step stops the script with its verdict, so nothing after
-- a refusal is written (./admission.ts). The key record's field names and the infix of its key are
-- the key index's (accounts), given as constants.
local gen = redis.call('GET', keyIndexActive) or '0'
local flat = redis.call('HGETALL', recordPrefix .. gen .. recordInfix .. keyHash)
if #flat == 0 then return {'unknown', flat} end
local h = {}
for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
if (h[fieldExpiresAt] or '') ~= '' and h[fieldExpiresAt] <= nowIso then return {'expired', flat} end
if not string.find(',' .. (h[fieldScopes] or '') .. ',', ',' .. scope .. ',', 1, true) then return {'forbidden', flat} end
-- The count in the key's fixed window: the same counter (key `{prefix}:{keyId}`, a window from the
-- first request) as rate-limiter-flexible's RateLimiterRedis, in two commands where its script
-- takes three: INCRBY, then the window's expiry set once (a new counter) or read (PTTL). A counter
-- that lost its expiry (-1) gets a new window, as rate-limiter-flexible does.
local counter = counterPrefix .. h[fieldKeyId]
local consumed = redis.call('INCRBY', counter, 1)
local ttl = -1
if consumed > 1 then ttl = redis.call('PTTL', counter) end
if ttl == -1 then
  redis.call('EXPIRE', counter, windowSeconds)
  ttl = 1000 * windowSeconds
end
-- The one place that decides the rate limit: the key's own limit, else the default.
local limit = tonumber(h[fieldRateLimit] or '') or 0
if limit <= 0 then limit = tonumber(defaultPerMinute) end
if consumed > limit then return {'limited', flat, consumed, ttl, limit} end
if amount == '' then return {'counted', flat, consumed, ttl, limit} end
local bgen = redis.call('GET', balancesActive) or '0'
local periods = {daily = daily, weekly = weekly, monthly = monthly}
local r = reserve(balancesPrefix .. bgen, h[fieldWorkspaceId], requestId, amount, nowMs, h[fieldKeyId], periods, reservation_keys(sharedPrefix, h[fieldWorkspaceId]))
return {'reserved', flat, consumed, ttl, limit, r}
