// The usage API's answer made into points, and the time window the charts show. The CSV exports come from the API (format=csv|focus).
import { amountNano } from '../../amount';
import type { ApiUsagePoint, Usage } from '../../api-types';

export type Granularity = Usage['granularity'];
export type GroupBy = NonNullable<Usage['groupBy']>;

/** One bucket of one group of GET …/usage, for the charts: its start in ms and its cost in nano-USD (summed exactly). */
export interface UsagePoint extends Omit<ApiUsagePoint, 't' | 'cost'> {
  /** keyId, memberId, config/model or endpoint */
  group: string;
  /** the key's name when grouped by key; the member's name when grouped by member */
  label?: string;
  start: number;
  cost: bigint;
}

export const WINDOWS: Record<Granularity, { ms: number; count: number; label: string }> = {
  minute: { ms: 60_000, count: 60, label: 'the last 60 minutes' },
  hour: { ms: 3_600_000, count: 48, label: 'the last 48 hours' },
  day: { ms: 86_400_000, count: 30, label: 'the last 30 days' },
};

export function range(g: Granularity, now = Date.now()) {
  const w = WINDOWS[g];
  const end = Math.floor(now / w.ms) * w.ms; // start of the current bucket (UTC)
  const from = end - (w.count - 1) * w.ms;
  return { from, to: end + w.ms, times: Array.from({ length: w.count }, (_, i) => from + i * w.ms) };
}

/** Flattens GET …/usage's series into points; zero buckets are dropped. */
export function usagePoints(usage: Usage): UsagePoint[] {
  const out: UsagePoint[] = [];
  for (const s of usage.series) {
    const group = s.keyId ?? s.memberId ?? s.config ?? s.model ?? s.endpoint ?? 'all';
    const label = s.keyName ?? s.memberName ?? undefined;
    for (const p of s.points) {
      out.push({
        group,
        ...(label ? { label } : {}),
        start: Date.parse(p.t),
        requests: p.requests,
        inputTokens: p.inputTokens,
        outputTokens: p.outputTokens,
        cost: amountNano(p.cost),
      });
    }
  }
  return out.filter((p) => p.requests > 0 || p.inputTokens > 0 || p.outputTokens > 0 || p.cost > 0n);
}

/** What each grouping is called on the page. */
export const GROUP_LABELS: Record<GroupBy, string> = {
  key: 'API key',
  member: 'Member (who created the key)',
  config: 'Model configuration',
  endpoint: 'Endpoint',
  model: 'Model',
};
