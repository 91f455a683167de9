--@include batch-runtime
-- Two kinds of call, in event order: 'requested' (endpoint, endpointName, endpointTtl: a request's
-- endpoint, kept until its debit) and 'debited' (every other name: a debit counted into its minute
-- and hour buckets by key, model, member and endpoint). Days are the sum of their hours and the
-- totals the sum of the key fields, both on read (./queries.ts): 32 fields per debit, not 60.
-- A request's endpoint waits in memo.open until its debit in the same batch takes it (most do, in a
-- catch-up); those left are SET when the batch's calls are done (atEnd), so a SET, a GET and their
-- expiry work per request are saved. The DEL stays: a key from an earlier batch must go as before.
-- A debit whose request came in an earlier batch takes its endpoint with GETDEL.
local open = memo.open
if not open then
  open = {}
  memo.open = open
  atEnd(function()
    for key, o in pairs(open) do redis.call('SET', key, o[1], 'EX', o[2]) end
  end)
end
if kind == 'requested' then
  open[endpoint] = {endpointName, endpointTtl}
  return 1
end
local owner = redis.call('HGET', owners, keyId) or 'unknown'
local ep
local o = open[endpoint]
if o then
  ep = o[1]
  open[endpoint] = nil
  redis.call('DEL', endpoint)
else
  -- Read and deleted in one command (a live debit's request was nearly always in an earlier batch).
  ep = redis.call('GETDEL', endpoint) or 'unknown'
end
local groups = {'k:' .. keyId, 'm:' .. model, 'u:' .. owner, 'e:' .. ep}
local inp, out, amt = tonumber(inputTokens), tonumber(outputTokens), tonumber(cost)
if not room(1, inp, out, amt) then
  -- A count that a double might not hold exactly: incr() takes the decimal strings.
  for _, bucket in ipairs({minute, hour}) do
    for _, p in ipairs(groups) do
      incr(bucket, p .. ':req', 1)
      incr(bucket, p .. ':in', inputTokens)
      incr(bucket, p .. ':out', outputTokens)
      incr(bucket, p .. ':cost', cost)
    end
  end
  return 1
end
-- The field names of each grouping, made once per batch (memo) rather than 16 strings per debit.
local names = {}
for j = 1, 4 do
  local p = groups[j]
  local f = memo[p]
  if not f then
    f = {p .. ':req', p .. ':in', p .. ':out', p .. ':cost'}
    memo[p] = f
  end
  names[j] = f
end
for i = 1, 2 do
  local s = sums(i == 1 and minute or hour)
  for j = 1, 4 do
    local f = names[j]
    local a, b, c, d = f[1], f[2], f[3], f[4]
    s[a] = (s[a] or 0) + 1
    s[b] = (s[b] or 0) + inp
    s[c] = (s[c] or 0) + out
    s[d] = (s[d] or 0) + amt
  end
end
return 1
