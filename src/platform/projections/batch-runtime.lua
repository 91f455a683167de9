-- The projector's batch runtime (./batch-writes.ts eachScript): the helpers a per-event script may
-- call (incr, room, sums, atEnd, and the table memo), then that script as the body of one(KEYS, ARGV),
-- run once per call packed in ARGV. A script that uses the helpers declares them with
-- `--@include batch-runtime` (its text comes from here, not from the include line).
local acc, order, spent, memo = {}, {}, 0, {}
local format, find, floor, tonumber = string.format, string.find, math.floor, tonumber
local function writeKey(key, fields)
  for field, s in pairs(fields) do
    redis.call('HINCRBY', key, field, format('%d', s))
  end
end
local function writeAll()
  for _, key in ipairs(order) do writeKey(key, acc[key]) end
  acc, order, spent = {}, {}, 0
end
local function room(...)
  local most = 0
  for j = 1, select('#', ...) do
    local d = select(j, ...)
    if type(d) ~= 'number' or d ~= floor(d) then return false end
    if d < 0 then d = -d end
    if d >= 1e15 then return false end
    if d > most then most = d end
  end
  if spent + most >= 1e15 then writeAll() end
  spent = spent + most
  return true
end
local function sums(key)
  local fields = acc[key]
  if not fields then
    fields = {}
    acc[key] = fields
    order[#order + 1] = key
  end
  return fields
end
local ends = {}
local function atEnd(fn) ends[#ends + 1] = fn end
local function incr(key, field, delta)
  local d = tonumber(delta)
  if not room(d) then
    redis.call('HINCRBY', key, field, delta)
    return
  end
  local fields = sums(key)
  fields[field] = (fields[field] or 0) + d
end
local function one(KEYS, ARGV)
--@body
end
-- KEYS and ARGV are two tables reused by every call (filled, the rest cleared): a table or two new
-- per call, grown an element at a time, cost more than the splitting. A script must not keep them.
local sub, K, A, nK, nA = string.sub, {}, {}, 0, 0
local i, n = 1, #ARGV
while i <= n do
  local c, nk, na = ARGV[i], 0, 0
  if c ~= '' then
    -- One call packed in one argument: numkeys NUL keys… NUL args…, NUL-separated.
    local len = #c
    local z = find(c, '\0', 1, true) or len + 1
    nk = tonumber(sub(c, 1, z - 1))
    local pos = z + 1
    for j = 1, nk do
      z = find(c, '\0', pos, true) or len + 1
      K[j] = sub(c, pos, z - 1)
      pos = z + 1
    end
    while pos <= len + 1 do
      z = find(c, '\0', pos, true) or len + 1
      na = na + 1
      A[na] = sub(c, pos, z - 1)
      pos = z + 1
    end
    i = i + 1
  else
    -- A call with a NUL in a key or argument: '', numkeys, numargs, keys…, args….
    nk, na = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    for j = 1, nk do K[j] = ARGV[i + 2 + j] end
    for j = 1, na do A[j] = ARGV[i + 2 + nk + j] end
    i = i + 3 + nk + na
  end
  for j = nk + 1, nK do K[j] = nil end
  for j = na + 1, nA do A[j] = nil end
  nK, nA = nk, na
  one(K, A)
end
for _, fn in ipairs(ends) do fn() end
writeAll()
return 1
