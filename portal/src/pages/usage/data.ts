// The usage API's answer made into points, the time window the charts show, and the CSV export.
import { amountNano, formatUsd } from '../../amount';

export type Granularity = 'minute' | 'hour' | 'day';
export type GroupBy = 'key' | 'model';

/** One bucket of one group, as the usage API answers (docs/BILLING.md). */
export interface UsagePoint {
  /** keyId or model */
  group: string;
  /** the key's name, when grouped by key and the key still exists */
  label?: string;
  start: number;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** nano-USD, summed exactly */
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

type Obj = Record<string, unknown>;
const num = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : 0);
const time = (v: unknown) => (typeof v === 'number' ? (v < 1e12 ? v * 1000 : v) : Date.parse(String(v)));

/**
 * Flattens GET …/usage (docs/BILLING.md: {series: [{keyId, keyName} | {model}, total, points: [{t,
 * requests, inputTokens, outputTokens, cost}]]}) into points; zero buckets are dropped.
 */
export function normaliseUsage(raw: unknown): UsagePoint[] {
  const r = (raw ?? {}) as Obj;
  const out: UsagePoint[] = [];
  const push = (group: string, p: Obj, label?: string) =>
    out.push({
      group,
      ...(label ? { label } : {}),
      start: time(p.start ?? p.t ?? p.bucket ?? p.time ?? p.ts),
      requests: num(p.requests),
      inputTokens: num(p.inputTokens ?? p.input_tokens),
      outputTokens: num(p.outputTokens ?? p.output_tokens),
      cost: amountNano(String(p.cost ?? p.costUsd ?? '0')),
    });
  if (Array.isArray(r.series)) {
    for (const s of r.series as Obj[]) {
      const group = String(s.group ?? s.key ?? s.keyId ?? s.model ?? s.config ?? s.name ?? 'all');
      const label = typeof s.keyName === 'string' ? s.keyName : undefined;
      for (const p of (s.points ?? s.buckets ?? []) as Obj[]) push(group, p, label);
    }
  } else {
    for (const p of (r.buckets ?? r.points ?? r.usage ?? []) as Obj[]) push(String(p.group ?? p.key ?? p.keyId ?? p.model ?? p.config ?? 'all'), p);
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
