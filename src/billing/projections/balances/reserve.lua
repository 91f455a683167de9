--@include reserve
return reserve(balance, wsId, requestId, amount, nowMs, keyId, {daily = daily, weekly = weekly, monthly = monthly},
  {held = held, total = total, open = open, owner = owner, keyTotalPrefix = keyTotalPrefix, member = member, memberTotalPrefix = memberTotalPrefix})
