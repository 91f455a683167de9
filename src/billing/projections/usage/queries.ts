import { formatUsd } from '../../../platform/money';
import type { ReadModels } from '../../../platform/projections/read-models';
import { BUCKET_SECONDS, bucketStart, Granularity, USAGE } from './projection';

export interface UsagePoint {
  /** Bucket start, ISO-8601 UTC. */
  t: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** USD decimal string. */
  cost: string;
}

export interface UsageSeries {
  /** keyId, model/config, userId or endpoint when grouped; absent for the totals series. */
  group?: string;
  points: UsagePoint[];
  total: Omit<UsagePoint, 't'>;
}

export interface UsageQuery {
  workspaceId: string;
  granularity: Granularity;
  /** Unix seconds, inclusive; rounded down to the bucket. */
  from: number;
  /** Unix seconds, exclusive. */
  to: number;
  groupBy?: UsageGrouping;
}

/** config is the name the events use for what the first release called model: both read the m: fields. */
export type UsageGrouping = 'key' | 'model' | 'config' | 'member' | 'endpoint';
const FIELD_PREFIX: Record<UsageGrouping, string> = { key: 'k:', model: 'm:', config: 'm:', member: 'u:', endpoint: 'e:' };

export const MAX_POINTS = 1500;

interface Acc {
  req: bigint;
  in: bigint;
  out: bigint;
  cost: bigint;
}

const zero = (): Acc => ({ req: 0n, in: 0n, out: 0n, cost: 0n });

function point(t: number | null, a: Acc): UsagePoint {
  return {
    t: t === null ? '' : new Date(t * 1000).toISOString(),
    requests: Number(a.req),
    inputTokens: Number(a.in),
    outputTokens: Number(a.out),
    cost: formatUsd(a.cost),
  };
}

/** Bucket starts covered by [from, to). */
export function bucketsIn(q: Pick<UsageQuery, 'granularity' | 'from' | 'to'>): number[] {
  const step = BUCKET_SECONDS[q.granularity];
  const out: number[] = [];
  for (let t = bucketStart(q.from, q.granularity); t < q.to; t += step) out.push(t);
  return out;
}

/** A day's point is read from its 24 hour buckets (days are not stored: ./projection.ts). */
const HOURS_PER_DAY = BUCKET_SECONDS.day / BUCKET_SECONDS.hour;

/**
 * A dense series (every bucket in the range, zeros included): the totals, or one series per key,
 * model, member or endpoint seen in the range. The totals are the sum of the per-key fields (every
 * debit has a key; t:… fields of older generations are not read), and a day the sum of its hours.
 */
export async function usageSeries(rm: ReadModels, q: UsageQuery): Promise<UsageSeries[]> {
  const starts = bucketsIn(q);
  if (starts.length > MAX_POINTS) throw new RangeError(`at most ${MAX_POINTS} points per request`);
  const k = await rm.keys(USAGE);
  const p = rm.redis.pipeline();
  const perPoint = q.granularity === 'day' ? HOURS_PER_DAY : 1;
  for (const t of starts) {
    if (perPoint === 1) p.hgetall(k(q.granularity, q.workspaceId, String(t)));
    else for (let h = 0; h < perPoint; h++) p.hgetall(k('hour', q.workspaceId, String(t + h * BUCKET_SECONDS.hour)));
  }
  const res = (await p.exec()) ?? [];
  const prefix = q.groupBy ? FIELD_PREFIX[q.groupBy] : 'k:';
  const groups = new Map<string, Acc[]>();
  res.forEach(([, h], j) => {
    const i = Math.floor(j / perPoint);
    for (const [field, value] of Object.entries((h as Record<string, string>) ?? {})) {
      if (!field.startsWith(prefix)) continue;
      const cut = field.lastIndexOf(':');
      const group = q.groupBy ? field.slice(2, cut) : '';
      const metric = field.slice(cut + 1) as keyof Acc;
      if (!['req', 'in', 'out', 'cost'].includes(metric)) continue;
      let arr = groups.get(group);
      if (!arr) groups.set(group, (arr = starts.map(zero)));
      arr[i][metric] += BigInt(value);
    }
  });
  if (!q.groupBy && !groups.has('')) groups.set('', starts.map(zero));
  return [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([group, accs]) => {
      const total = accs.reduce((s, a) => ({ req: s.req + a.req, in: s.in + a.in, out: s.out + a.out, cost: s.cost + a.cost }), zero());
      const { t: _t, ...tot } = point(null, total);
      return { ...(q.groupBy ? { group } : {}), points: accs.map((a, i) => point(starts[i], a)), total: tot };
    });
}
