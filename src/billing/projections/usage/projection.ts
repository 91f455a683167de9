import { formatUsd } from '../../../platform/money';
import type { ApiKeyCreated, MemberLeft, MemberRemoved } from '../../../accounts/events';
import type { InferenceRequested, TokensDebited } from '../../../inference/events';
import { accessEndedMessage } from './access-ended';
import { projection, type ProjectionTx } from '../../../platform/projections/projection';
import { BATCH_RUNTIME } from '../../../platform/projections/batch-writes';
import { luaScript } from '../../../platform/redis-scripts';
import { wsTag } from '../../../platform/projections/keyspace';

export const USAGE = 'usage';

export type Granularity = 'minute' | 'hour' | 'day';

export const BUCKET_SECONDS: Record<Granularity, number> = { minute: 60, hour: 3600, day: 86400 };

/**
 * How long each stored granularity is kept, counted from the bucket's own time (so a rebuild ends the
 * same). Days are not stored: a day is the sum of its 24 hours (./queries.ts), so hours are kept for
 * good, as days were.
 */
export const RETENTION_SECONDS: Record<StoredGranularity, number | null> = { minute: 8 * 86400, hour: null };

/** The granularities written per debit; `day` is derived from `hour` on read. */
export type StoredGranularity = 'minute' | 'hour';

/**
 * Usage series: every TokensDebited counted into UTC minute and hour buckets per workspace, with
 * breakdowns by API key, model, member and endpoint. What a read needs and no debit writes is
 * derived on read (./queries.ts): a day is the sum of its 24 hours, the totals the sum of the
 * per-key fields (every debit has a key). Written per debit that is 2 × 16 fields, not the 3 × 20
 * of minute, hour and day buckets with totals (issue 31: the largest share of a live batch's
 * Redis commands).
 *
 *   rm:usage:{gen}:{minute|hour}:{wsId}:{bucketStartUnixSeconds}   hash (cost in nano-USD):
 *       k:{keyId}:req|in|out|cost                     per key
 *       m:{model}:req|in|out|cost                     per model (the debit's config)
 *       u:{userId}:… e:{endpoint}:…                   per member who created the key, per endpoint (countDebit, below)
 *
 * Generations written before this change also hold t:… fields and day buckets; reads ignore both,
 * so a bucket reads the same whichever code wrote it. Their hour buckets expire after 100 days, so
 * days older than that read as zero until the usage projection is rebuilt (docs/BILLING.md).
 *
 * Live (not while rebuilding), each debit is also published on the shared channel
 * `{prefix}usage-live:{wsId}` as a JSON UsageLiveEvent, for GET …/usage/live; and each
 * MemberRemoved / MemberLeft as an access-ended marker (./access-ended.ts) in the same order, so a
 * removed member's stream closes before any later debit is sent to it.
 */
export interface UsageLiveEvent {
  requestId: string;
  workspaceId: string;
  keyId: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** USD decimal string. */
  cost: string;
  costNanoUsd: string;
  /** ISO-8601 time of the debit. */
  at: string;
}

/**
 * A workspace's live channel, a shard channel (SPUBLISH/SSUBSCRIBE) under the workspace's hash tag:
 * on a Redis Cluster it is served by the workspace's node alone, not broadcast over the cluster bus.
 */
export const liveChannel = (sharedKey: (...p: string[]) => string, workspaceId: string) => sharedKey('usage-live', wsTag(workspaceId));

const STORED: readonly StoredGranularity[] = ['minute', 'hour'];

export const bucketStart = (unixSeconds: number, g: Granularity) => unixSeconds - (unixSeconds % BUCKET_SECONDS[g]);

export const usageProjection = projection<TokensDebited | InferenceRequested | ApiKeyCreated | MemberRemoved | MemberLeft>()({
  name: USAGE,
  handles: ['TokensDebited', 'MemberRemoved', 'MemberLeft', 'ApiKeyCreated', 'InferenceRequested'],
  apply(event, tx) {
    if (event.type === 'ApiKeyCreated') return rememberKeyOwner(event.data, tx);
    if (event.type === 'InferenceRequested') return rememberEndpoint(event.data, tx);
    if (event.type === 'MemberRemoved' || event.type === 'MemberLeft') {
      const reason = event.type === 'MemberRemoved' ? 'removed' : 'left';
      if (tx.live)
        tx.multi.spublish(liveChannel(tx.sharedKey, event.data.workspaceId), accessEndedMessage({ userId: event.data.userId, reason }));
      return;
    }
    const d = event.data;
    const t = Math.floor(Date.parse(event.created) / 1000);
    const buckets: [string, string] = ['', ''];
    for (let i = 0; i < 2; i++) {
      const g = STORED[i];
      const start = bucketStart(t, g);
      buckets[i] = tx.key(g, d.workspaceId, String(start));
      const keep = RETENTION_SECONDS[g];
      if (keep !== null) tx.expireAt(buckets[i], start + BUCKET_SECONDS[g] + keep);
    }
    // Every bucket field, in one script call per debit (countDebit, below).
    countDebit(d, buckets, tx);
    if (tx.live) {
      const live: UsageLiveEvent = {
        requestId: d.requestId,
        workspaceId: d.workspaceId,
        keyId: d.keyId,
        model: d.config,
        inputTokens: d.inputTokens,
        outputTokens: d.outputTokens,
        cost: formatUsd(BigInt(d.amountNanoUsd)),
        costNanoUsd: d.amountNanoUsd,
        at: event.created,
      };
      tx.multi.spublish(liveChannel(tx.sharedKey, d.workspaceId), JSON.stringify(live));
    }
  },
});

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
 * The same script counts the debit's other fields too (k:{keyId}:, m:{model}:; countDebit).
 */
export const COUNT_DEBIT = luaScript(
  'billing/projections/usage/count-debit.lua',
  {
    keys: ['endpoint', 'owners', 'minute', 'hour'],
    args: ['kind', 'endpointName', 'endpointTtl', 'keyId', 'inputTokens', 'outputTokens', 'cost', 'model'],
  },
  [BATCH_RUNTIME],
);

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
  COUNT_DEBIT.each(
    tx,
    { endpoint: tx.key('endpoint', d.requestId), owners: '', minute: '', hour: '' },
    {
      kind: 'requested',
      endpointName: d.endpoint,
      endpointTtl: ENDPOINT_TTL,
      keyId: '',
      inputTokens: '',
      outputTokens: '',
      cost: '',
      model: '',
    },
  );
}

const ENDPOINT_TTL = String(ENDPOINT_TTL_SECONDS);

/**
 * Counts a debit into its minute and hour buckets (`buckets`), every grouping: key (k:), model (m:),
 * member (u:) and endpoint (e:), 4 counters each.
 *
 * One script call per debit (tx.evalEach: one EVAL per batch, after the batch's tx.multi commands,
 * so the owner and endpoint written by earlier events of the same batch are there; incr() sums a
 * batch's counts per bucket field, one HINCRBY each at the end). The totals, key and model counts
 * used to be summed in the projector (tx.hincrby): 36 calls, map entries and 72 RESP arguments per
 * debit, the largest share of the projector's garbage; in the script they cost one more argument
 * (the model). test/billing/int/projections/usage.test.ts pins what is stored.
 */
export function countDebit(d: TokensDebited['data'], buckets: [string, string], tx: ProjectionTx): void {
  COUNT_DEBIT.each(
    tx,
    {
      endpoint: tx.key('endpoint', d.requestId),
      owners: tx.key('owner', d.workspaceId),
      minute: buckets[0],
      hour: buckets[1],
    },
    {
      kind: 'debited',
      endpointName: '',
      endpointTtl: '',
      keyId: d.keyId,
      inputTokens: String(d.inputTokens),
      outputTokens: String(d.outputTokens),
      cost: d.amountNanoUsd,
      model: d.config,
    },
  );
}
