import { formatUsd } from '../../../platform/money';
import type { TokensDebited } from '../../../inference/events';
import type { RecordedEvent } from '../../../platform/eventstore/port';
import type { Projection, ProjectionTx } from '../../../platform/projections/projection';

export const USAGE = 'usage';

export type Granularity = 'minute' | 'hour' | 'day';

export const BUCKET_SECONDS: Record<Granularity, number> = { minute: 60, hour: 3600, day: 86400 };

/** How long each granularity is kept, counted from the bucket's own time (so a rebuild ends the same). */
export const RETENTION_SECONDS: Record<Granularity, number | null> = { minute: 8 * 86400, hour: 100 * 86400, day: null };

/**
 * Usage series: every TokensDebited counted into UTC minute, hour and day buckets per workspace,
 * with totals and breakdowns by API key and by model.
 *
 *   rm:usage:{gen}:{granularity}:{wsId}:{bucketStartUnixSeconds}   hash:
 *       t:req t:in t:out t:cost                       totals (cost in nano-USD)
 *       k:{keyId}:req|in|out|cost                     per key
 *       m:{model}:req|in|out|cost                     per model
 *
 * Live (not while rebuilding), each debit is also published on the shared channel
 * `{prefix}usage-live:{wsId}` as a JSON UsageLiveEvent, for GET …/usage/live.
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

export const liveChannel = (sharedKey: (...p: string[]) => string, workspaceId: string) => sharedKey('usage-live', workspaceId);

export const bucketStart = (unixSeconds: number, g: Granularity) => unixSeconds - (unixSeconds % BUCKET_SECONDS[g]);

export const usageProjection: Projection = {
  name: USAGE,
  handles: new Set(['TokensDebited']),
  apply(event: RecordedEvent, tx: ProjectionTx) {
    const d = event.data as TokensDebited['data'];
    const t = Math.floor(Date.parse(event.created) / 1000);
    const cost = BigInt(d.amountNanoUsd);
    for (const g of ['minute', 'hour', 'day'] as const) {
      const start = bucketStart(t, g);
      const key = tx.key(g, d.workspaceId, String(start));
      // Batched (tx.hincrby): a batch's debits in one bucket become one sum per field.
      for (const prefix of ['t', `k:${d.keyId}`, `m:${d.config}`]) {
        tx.hincrby(key, `${prefix}:req`, 1);
        tx.hincrby(key, `${prefix}:in`, d.inputTokens);
        tx.hincrby(key, `${prefix}:out`, d.outputTokens);
        tx.hincrby(key, `${prefix}:cost`, cost);
      }
      const keep = RETENTION_SECONDS[g];
      if (keep !== null) tx.expireAt(key, start + BUCKET_SECONDS[g] + keep);
    }
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
      tx.multi.publish(liveChannel(tx.sharedKey, d.workspaceId), JSON.stringify(live));
    }
  },
};
