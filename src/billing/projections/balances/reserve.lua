--@include reserve
return reserve(balance, wsId, requestId, amount, nowMs, keyId, {daily = daily, weekly = weekly, monthly = monthly}, {held = held, open = open})
