--@include reserve
-- Admission's Redis step, on the workspace's slot: every key it touches is the workspace's (hash tag
-- {ws:<id>}); the key was looked up and its expiry and scope checked before (./admission.ts). Each
-- step stops the script with its verdict, so nothing after a refusal is written.
-- The count in the key's fixed window: the same counting as rate-limiter-flexible's RateLimiterRedis
-- (a window from the first request), in two commands where its script takes three: INCRBY, then the
-- window's expiry set once (a new counter) or read (PTTL). A counter that lost its expiry (-1) gets a
-- new window, as rate-limiter-flexible does.
local consumed = redis.call('INCRBY', counter, 1)
local ttl = -1
if consumed > 1 then ttl = redis.call('PTTL', counter) end
if ttl == -1 then
  redis.call('EXPIRE', counter, windowSeconds)
  ttl = 1000 * windowSeconds
end
-- The one place that decides the rate limit: the key's own limit (given by the caller from the key's
-- record), else the default.
local lim = tonumber(limit)
if consumed > lim then return {'limited', consumed, ttl, lim} end
if amount == '' then return {'counted', consumed, ttl, lim} end
local periods = {daily = daily, weekly = weekly, monthly = monthly}
local r = reserve(balance, wsId, requestId, amount, nowMs, keyId, periods, {held = held, open = open})
return {'reserved', consumed, ttl, lim, r}
