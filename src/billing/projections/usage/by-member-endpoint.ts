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
 */
const COUNT_BY_MEMBER_AND_ENDPOINT = `
local owner = redis.call('HGET', KEYS[4], ARGV[1]) or 'unknown'
local ep = redis.call('GET', KEYS[5]) or 'unknown'
redis.call('DEL', KEYS[5])
for i = 1, 3 do
  for _, p in ipairs({'u:' .. owner, 'e:' .. ep}) do
    incr(KEYS[i], p .. ':req', 1)
    incr(KEYS[i], p .. ':in', ARGV[2])
    incr(KEYS[i], p .. ':out', ARGV[3])
    incr(KEYS[i], p .. ':cost', ARGV[4])
  end
end
return 1`;

/** An open request's endpoint is kept this long at most (a request is debited within minutes; the sweeper closes dead ones). */
const ENDPOINT_TTL_SECONDS = 7 * 86400;

export function rememberKeyOwner(d: ApiKeyCreated['data'], tx: ProjectionTx): void {
  tx.multi.hset(tx.key('owner', d.workspaceId), d.keyId, d.createdBy);
}

export function rememberEndpoint(d: InferenceRequested['data'], tx: ProjectionTx): void {
  tx.multi.set(tx.key('endpoint', d.requestId), d.endpoint, 'EX', ENDPOINT_TTL_SECONDS);
}

/** `buckets`: the minute, hour and day bucket keys of the debit. */
export function countByMemberAndEndpoint(d: TokensDebited['data'], buckets: [string, string, string], tx: ProjectionTx): void {
  // Batched (tx.evalEach: one EVAL per batch, after the batch's tx.multi commands, so the owner and
  // endpoint written by earlier events of the same batch are there; incr() sums a batch's counts
  // per bucket field, one HINCRBY each).
  tx.evalEach(
    COUNT_BY_MEMBER_AND_ENDPOINT,
    [...buckets, tx.key('owner', d.workspaceId), tx.key('endpoint', d.requestId)],
    [d.keyId, String(d.inputTokens), String(d.outputTokens), d.amountNanoUsd],
  );
}
