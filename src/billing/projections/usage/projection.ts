import { formatUsd } from '../../../platform/money';
import type { TokensDebited } from '../../../inference/events';
import type { ApiKeyCreated, MemberLeft, MemberRemoved } from '../../../accounts/events';
import type { InferenceRequested } from '../../../inference/events';
import { accessEndedMessage } from './access-ended';
import { countDebit, rememberEndpoint, rememberKeyOwner } from './by-member-endpoint';
import { projection } from '../../../platform/projections/projection';

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
 *       m:{model}:req|in|out|cost                     per model (the debit's config)
 *       u:{userId}:… e:{endpoint}:…                   per member who created the key, per endpoint (./by-member-endpoint.ts)
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

export const liveChannel = (sharedKey: (...p: string[]) => string, workspaceId: string) => sharedKey('usage-live', workspaceId);

const GRANULARITIES = ['minute', 'hour', 'day'] as const;

export const bucketStart = (unixSeconds: number, g: Granularity) => unixSeconds - (unixSeconds % BUCKET_SECONDS[g]);

export const usageProjection = projection<TokensDebited | InferenceRequested | ApiKeyCreated | MemberRemoved | MemberLeft>()({
  name: USAGE,
  handles: ['TokensDebited', 'MemberRemoved', 'MemberLeft', 'ApiKeyCreated', 'InferenceRequested'],
  apply(event, tx) {
    if (event.type === 'ApiKeyCreated') return rememberKeyOwner(event.data, tx);
    if (event.type === 'InferenceRequested') return rememberEndpoint(event.data, tx);
    if (event.type === 'MemberRemoved' || event.type === 'MemberLeft') {
      const reason = event.type === 'MemberRemoved' ? 'removed' : 'left';
      if (tx.live) tx.multi.publish(liveChannel(tx.sharedKey, event.data.workspaceId), accessEndedMessage({ userId: event.data.userId, reason }));
      return;
    }
    const d = event.data;
    const t = Math.floor(Date.parse(event.created) / 1000);
    const buckets: [string, string, string] = ['', '', ''];
    for (let i = 0; i < 3; i++) {
      const g = GRANULARITIES[i];
      const start = bucketStart(t, g);
      buckets[i] = tx.key(g, d.workspaceId, String(start));
      const keep = RETENTION_SECONDS[g];
      if (keep !== null) tx.expireAt(buckets[i], start + BUCKET_SECONDS[g] + keep);
    }
    // Every bucket field, in one script call per debit (./by-member-endpoint.ts).
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
      tx.multi.publish(liveChannel(tx.sharedKey, d.workspaceId), JSON.stringify(live));
    }
  },
});
