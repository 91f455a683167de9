--@include grant-book
-- One money event's ledger entry, with the running balance after it, and the ledger's own grant
-- book (../grants/grant-book.inc.lua), once per event of a batch in store order (tx.evalEach).
-- op 'grant' (a deposit, reload or granted credit; key: its draw-order key): amount added;
-- op 'debit' (amount: what was debited, positive): the entry gets the grants it drew from, "drawn";
-- op 'expire' (key: the grantId): the amount is what the grant had left, known only here.
-- The entry is head .. [amount for 'expire'] .. balance .. tail. INCRBY's reply reaches Lua as a
-- double: exact below 2^53 in size, written with %d; beyond, the stored decimal string.
local function incr_balance(delta)
  local b = redis.call('INCRBY', balance, delta)
  if b < 9007199254740992 and b > -9007199254740992 then return string.format('%d', b) end
  return redis.call('GET', balance)
end
if op == 'grant' then
  book_add(book, order, key, amount)
  return redis.call('RPUSH', entries, head .. incr_balance(amount) .. tail)
elseif op == 'debit' then
  local draws = book_draw(book, order, amount, atMs)
  local items = {}
  for i = 1, #draws, 2 do
    table.insert(items, '{"grantId":"' .. draws[i] .. '","amountNanoUsd":"' .. draws[i + 1] .. '"}')
  end
  local delta = amount == '0' and '0' or '-' .. amount
  return redis.call('RPUSH', entries, head .. incr_balance(delta) .. '","drawn":[' .. table.concat(items, ',') .. ']}')
else
  local rem = book_expire(book, order, key)
  local delta = rem == '0' and '0' or '-' .. rem
  return redis.call('RPUSH', entries, head .. delta .. '","balanceNanoUsd":"' .. incr_balance(delta) .. '"}')
end
