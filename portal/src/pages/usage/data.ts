// The usage API's answer made into points, the time window the charts show, and the CSV export.
import { amountNano, formatUsd } from '../../amount';
import type { ApiUsagePoint, Usage } from '../../api-types';

export type Granularity = Usage['granularity'];
export type GroupBy = NonNullable<Usage['groupBy']>;

/** One bucket of one group of GET …/usage, for the charts: its start in ms and its cost in nano-USD (summed exactly). */
export interface UsagePoint extends Omit<ApiUsagePoint, 't' | 'cost'> {
  /** keyId or model */
  group: string;
  /** the key's name, when grouped by key */
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
    const group = s.keyId ?? s.model ?? 'all';
    const label = s.keyName ?? undefined;
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

/** The points as CSV, oldest first; keys by their names when grouped by key. */
export function usageCsv(points: UsagePoint[], granularity: Granularity, groupBy: GroupBy, groupName: (g: string) => string): string {
  const rows = [['bucket_start_utc', 'granularity', groupBy, 'requests', 'input_tokens', 'output_tokens', 'cost_usd']];
  for (const p of [...points].sort((a, b) => a.start - b.start || a.group.localeCompare(b.group))) {
    rows.push([new Date(p.start).toISOString(), granularity, groupBy === 'key' ? groupName(p.group) : p.group, String(p.requests), String(p.inputTokens), String(p.outputTokens), formatUsd(p.cost)]);
  }
  return rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

function csvCell(raw: string): string {
  // A cell starting with = + - @ would be a formula in a spreadsheet: quote it as text.
  const v = /^[=+\-@\t\r]/.test(raw) && !/^-?\d/.test(raw) ? `'${raw}` : raw;
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}
