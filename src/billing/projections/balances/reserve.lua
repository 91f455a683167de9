--@include reserve
local gen = redis.call('GET', active) or '0'
return reserve(genPrefix .. gen, wsId, requestId, amount, nowMs, keyId, {daily = daily, weekly = weekly, monthly = monthly}, {held = held, open = open})
