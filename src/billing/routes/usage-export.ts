import type { z } from 'zod';
import { keysOf, auditKeys, profilesOf } from '../../accounts';
import { BUCKET_SECONDS, type Granularity } from '../projections/usage/projection';
import type { UsageGrouping, UsageSeries } from '../projections/usage/queries';
import { csvLine } from '../../platform/http/csv';
import type { ReadModels } from '../../platform/projections/read-models';
import { FOCUS_COLUMNS, USAGE_CSV_COLUMNS, type usageSeriesView } from './usage-schemas';

/** One series as the JSON answer shows it: the group's id and its labels (a key's name, a member's name). */
export type LabelledSeries = z.input<typeof usageSeriesView> & { group: string; groupName: string | null };

/** Names the groups: keys by their current (or, once deleted, last) name; members by their profile. */
export async function labelSeries(
  rm: ReadModels,
  workspaceId: string,
  groupBy: UsageGrouping | undefined,
  series: UsageSeries[],
): Promise<LabelledSeries[]> {
  const groups = series.map((x) => x.group ?? '');
  if (groupBy === 'key') {
    const names = new Map((await keysOf(rm, workspaceId)).map((k) => [k.keyId, k.name]));
    const live = new Set(names.keys());
    // A deleted key keeps its name in the audit read model.
    for (const [id, k] of await auditKeys(
      rm,
      groups.filter((id) => id && !live.has(id)),
    ))
      if (k.name) names.set(id, k.name);
    return series.map((x, i) => ({
      group: groups[i],
      groupName: names.get(groups[i]) ?? null,
      keyId: groups[i],
      keyName: names.get(groups[i]) ?? null,
      keyDeleted: !live.has(groups[i]),
      total: x.total,
      points: x.points,
    }));
  }
  if (groupBy === 'member') {
    const profiles = await profilesOf(
      rm,
      groups.filter((g) => g !== 'unknown'),
    );
    return series.map((x, i) => {
      const p = profiles.get(groups[i]);
      return {
        group: groups[i],
        groupName: p?.name ?? null,
        memberId: groups[i],
        memberName: p?.name ?? null,
        memberEmail: p?.email ?? null,
        total: x.total,
        points: x.points,
      };
    });
  }
  const field = groupBy === 'model' ? 'model' : groupBy === 'config' ? 'config' : groupBy === 'endpoint' ? 'endpoint' : null;
  return series.map((x, i) => ({
    group: groups[i],
    groupName: null,
    ...(field ? { [field]: groups[i] } : {}),
    total: x.total,
    points: x.points,
  }));
}

const iso = (t: string, plusSeconds: number) => new Date(Date.parse(t) + plusSeconds * 1000).toISOString();

/** The CSV export: one row per series and bucket that has usage. */
export function usageCsv(series: LabelledSeries[], granularity: Granularity, groupBy: UsageGrouping | undefined): string {
  let out = csvLine(USAGE_CSV_COLUMNS);
  for (const s of series) {
    for (const p of s.points) {
      if (p.requests === 0) continue;
      out += csvLine([
        p.t,
        iso(p.t, BUCKET_SECONDS[granularity]),
        groupBy ?? '',
        s.group,
        s.groupName,
        p.requests,
        p.inputTokens,
        p.outputTokens,
        p.cost,
      ]);
    }
  }
  return out;
}

/** The UTC calendar month a time falls in: [start, end). */
function monthOf(t: string): [string, string] {
  const d = new Date(t);
  return [
    new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString(),
    new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString(),
  ];
}

/**
 * A FOCUS-style cost CSV (https://focus.finops.org/): one usage charge per API key and bucket. The
 * billing period is the bucket's UTC calendar month (statements are monthly), the charge period the
 * bucket, the resource the key, the quantity its tokens (input + output), the cost exact in USD.
 */
export function focusCsv(workspaceId: string, series: LabelledSeries[], granularity: Granularity): string {
  let out = csvLine(FOCUS_COLUMNS);
  for (const s of series) {
    for (const p of s.points) {
      if (p.requests === 0) continue;
      const [periodStart, periodEnd] = monthOf(p.t);
      out += csvLine([
        workspaceId,
        periodStart,
        periodEnd,
        p.t,
        iso(p.t, BUCKET_SECONDS[granularity]),
        'Usage',
        'Inference tokens (input and output)',
        'tollgate',
        'tollgate',
        'tollgate inference',
        'AI and Machine Learning',
        s.group,
        s.groupName,
        p.cost,
        p.cost,
        'USD',
        p.inputTokens + p.outputTokens,
        'Tokens',
        p.requests,
        p.inputTokens,
        p.outputTokens,
      ]);
    }
  }
  return out;
}
