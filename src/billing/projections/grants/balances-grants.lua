--@include grant-book
-- The balances read model's grant book, one call per money event of a batch, in store order
-- (projections/balances/projection.ts). op: 'add' (key: the draw-order key), 'draw' (a debit; atMs
-- its time) or 'expire' (key: the grantId): the expiry takes what the grant has left out of the
-- balance here, since only the book knows it; meta gets '<grantId>:expired' → that amount.
if op == 'add' then
  book_add(book, order, key, amount)
elseif op == 'draw' then
  book_draw(book, order, amount, atMs)
else
  local rem = book_expire(book, order, key)
  if rem ~= '0' then
    redis.call('HINCRBY', book, 'balance', '-' .. rem)
    redis.call('HINCRBY', book, 'expired', rem)
  end
  redis.call('HSET', meta, key .. ':expired', rem)
end
return 1
