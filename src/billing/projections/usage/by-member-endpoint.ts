import type { ApiKeyCreated } from '../../../accounts/events';
import type { InferenceRequested, TokensDebited } from '../../../inference/events';
import type { ProjectionTx } from '../../../platform/projections/projection';

/**
 * The usage buckets by member (who created the key) and by endpoint. A TokensDebited names neither:
 * the key's creator is in its ApiKeyCreated and the endpoint in the request's InferenceRequested, both
 * earlier in the event order. The projection keeps them in its own keys and a Lua script inside the
 * same MULTI reads them as it counts the debit (the projection rule: no read before write, except
 * through Lua in the MULTI), so a rebuild ends the same:
 *
 *   rm:usage:{gen}:owner:{wsId}        hash keyId → userId of its creator (kept after deletion)
 *   rm:usage:{gen}:endpoint:{requestId} string: the endpoint, deleted when the request is debited
 *
 * Bucket fields: u:{userId}:req|in|out|cost and e:{endpoint}:req|in|out|cost ("unknown" when the
 * event that names it is missing, e.g. debits written before this grouping existed and not rebuilt).
 * The same script counts the debit's other fields too (t:, k:{keyId}:, m:{model}:; countDebit).
 */
const COUNT_DEBIT = `
-- A request's endpoint waits in memo.open until its debit in the same batch takes it (most do, in a
-- catch-up); those left are SET when the batch's calls are done (atEnd), so a SET, a GET and their
-- expiry work per request are saved. The DEL stays: a key from an earlier batch must go as before.
local open = memo.open
if not open then
  open = {}
  memo.open = open
  atEnd(function()
    for key, o in pairs(open) do redis.call('SET', key, o[1], 'EX', o[2]) end
  end)
end
if ARGV[1] == 'requested' then
  open[KEYS[1]] = {ARGV[2], ARGV[3]}
  return 1
end
local owner = redis.call('HGET', KEYS[4], ARGV[2]) or 'unknown'
local ep
local o = open[KEYS[5]]
if o then
  ep = o[1]
  open[KEYS[5]] = nil
else
  ep = redis.call('GET', KEYS[5]) or 'unknown'
end
redis.call('DEL', KEYS[5])
local groups = {'t', 'k:' .. ARGV[2], 'm:' .. ARGV[6], 'u:' .. owner, 'e:' .. ep}
local inp, out, cost = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if not room(1, inp, out, cost) then
  -- A count that a double might not hold exactly: incr() takes the decimal strings.
  for i = 1, 3 do
    for _, p in ipairs(groups) do
      incr(KEYS[i], p .. ':req', 1)
      incr(KEYS[i], p .. ':in', ARGV[3])
      incr(KEYS[i], p .. ':out', ARGV[4])
      incr(KEYS[i], p .. ':cost', ARGV[5])
    end
  end
  return 1
end
-- The field names of each grouping, made once per batch (memo) rather than 20 strings per debit.
local names = {}
for j = 1, 5 do
  local p = groups[j]
  local f = memo[p]
  if not f then
    f = {p .. ':req', p .. ':in', p .. ':out', p .. ':cost'}
    memo[p] = f
  end
  names[j] = f
end
for i = 1, 3 do
  local s = sums(KEYS[i])
  for j = 1, 5 do
    local f = names[j]
    local a, b, c, d = f[1], f[2], f[3], f[4]
    s[a] = (s[a] or 0) + 1
    s[b] = (s[b] or 0) + inp
    s[c] = (s[c] or 0) + out
    s[d] = (s[d] or 0) + cost
  end
end
return 1`;

/** An open request's endpoint is kept this long at most (a request is debited within minutes; the sweeper closes dead ones). */
const ENDPOINT_TTL_SECONDS = 7 * 86400;

export function rememberKeyOwner(d: ApiKeyCreated['data'], tx: ProjectionTx): void {
  tx.multi.hset(tx.key('owner', d.workspaceId), d.keyId, d.createdBy);
}

/**
 * A call of the debit's script, not a SET on the MULTI: one per request was most of a catch-up
 * batch's ioredis Commands (each with its promise and QUEUED reply). The same script keeps the call
 * order, so a debit later in the batch finds the endpoint.
 */
export function rememberEndpoint(d: InferenceRequested['data'], tx: ProjectionTx): void {
  tx.evalEach(COUNT_DEBIT, [tx.key('endpoint', d.requestId)], ['requested', d.endpoint, ENDPOINT_TTL]);
}

const ENDPOINT_TTL = String(ENDPOINT_TTL_SECONDS);

/**
 * Counts a debit into its minute, hour and day buckets (`buckets`), every grouping: totals (t:), key
 * (k:), model (m:), member (u:) and endpoint (e:), 4 counters each.
 *
 * One script call per debit (tx.evalEach: one EVAL per batch, after the batch's tx.multi commands,
 * so the owner and endpoint written by earlier events of the same batch are there; incr() sums a
 * batch's counts per bucket field, one HINCRBY each at the end). The totals, key and model counts
 * used to be summed in the projector (tx.hincrby): 36 calls, map entries and 72 RESP arguments per
 * debit, the largest share of the projector's garbage; in the script they cost one more argument
 * (the model). What is stored is the same (test/billing/int/projections/usage.test.ts pins it).
 */
export function countDebit(d: TokensDebited['data'], buckets: [string, string, string], tx: ProjectionTx): void {
  tx.evalEach(
    COUNT_DEBIT,
    [buckets[0], buckets[1], buckets[2], tx.key('owner', d.workspaceId), tx.key('endpoint', d.requestId)],
    ['debited', d.keyId, String(d.inputTokens), String(d.outputTokens), d.amountNanoUsd, d.config],
  );
}
