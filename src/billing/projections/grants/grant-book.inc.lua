-- The grant book (src/billing/grants.ts, GrantBook, in Lua; test/billing/int/grant-book-script.test.ts
-- holds the two equal over random histories). The balances and the ledger read models each keep one.
--   book:  a hash; 'g:<grantId>' → what the grant has left (absent: nothing), and 'expiring' → the
--          grants with an expiry and something left, '<13-digit ms>:<grantId>' joined by ' ', sorted
--          (the admission script reads it beside 'balance', from the same hash);
--   order: a sorted set of draw-order keys, all scored 0, so byte order is the draw order
--          ('ppp|eeeeeeeeeeeee|<20-digit position>|<grantId>': grants.ts drawOrderKey).
-- A grant's amount is at most the largest charge (999 999.99 USD, 1e15 nano-USD < 2^53), and a
-- debit far less: a Lua double holds every amount here exactly; each is written back with '%d'.
local NEVER = '9999999999999'
local function book_unlist(book, id)
  local list = redis.call('HGET', book, 'expiring')
  if not list then return end
  local out = {}
  for entry in string.gmatch(list, '%S+') do
    if string.sub(entry, 15) ~= id then table.insert(out, entry) end
  end
  if #out == 0 then redis.call('HDEL', book, 'expiring') else redis.call('HSET', book, 'expiring', table.concat(out, ' ')) end
end
local function book_add(book, order, key, amount)
  if amount == '0' then return end
  local id = string.sub(key, 40)
  redis.call('HSET', book, 'g:' .. id, amount)
  redis.call('ZADD', order, 0, key)
  local exp = string.sub(key, 5, 17)
  if exp ~= NEVER then
    local entries = {}
    local list = redis.call('HGET', book, 'expiring')
    if list then for e in string.gmatch(list, '%S+') do table.insert(entries, e) end end
    table.insert(entries, exp .. ':' .. id)
    table.sort(entries)
    redis.call('HSET', book, 'expiring', table.concat(entries, ' '))
  end
end
-- Draws amount at atMs (13 digits): first from grants not expired by then, in draw order, then
-- (holds admitted before an expiry) from those past it. Returns {id, amount, id, amount, …}, uncovered.
local function book_draw(book, order, amount, atMs)
  local left = tonumber(amount)
  local draws = {}
  if left <= 0 then return draws, 0 end
  local keys = redis.call('ZRANGE', order, 0, -1)
  for pass = 1, 2 do
    for _, key in ipairs(keys) do
      if left <= 0 then break end
      local exp = string.sub(key, 5, 17)
      if (exp <= atMs) == (pass == 2) then
        local id = string.sub(key, 40)
        local field = 'g:' .. id
        local rem = tonumber(redis.call('HGET', book, field) or '0')
        if rem > 0 then
          local take = rem
          if left < take then take = left end
          left = left - take
          table.insert(draws, id)
          table.insert(draws, string.format('%d', take))
          if take == rem then
            redis.call('HDEL', book, field)
            redis.call('ZREM', order, key)
            if exp ~= NEVER then book_unlist(book, id) end
          else
            redis.call('HINCRBY', book, field, string.format('%d', -take))
          end
        end
      end
    end
  end
  return draws, left
end
-- Records a grant's expiry: returns what it had left ('0' if nothing) and takes it out of the book.
local function book_expire(book, order, id)
  local rem = redis.call('HGET', book, 'g:' .. id)
  if not rem then return '0' end
  redis.call('HDEL', book, 'g:' .. id)
  for _, key in ipairs(redis.call('ZRANGE', order, 0, -1)) do
    if string.sub(key, 40) == id then redis.call('ZREM', order, key) end
  end
  book_unlist(book, id)
  return rem
end
