import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { enc, get } from '../api';
import { BarChart, type Series } from '../components/chart';
import { ErrorMessage, Field, Loading } from '../components/ui';
import { amountNano, formatUsd } from '../amount';
import { integer, nanoToNumber, usd } from '../format';
import { useWorkspace } from '../state';
import { listKeys, type ApiKey } from '../resources';

type Granularity = 'minute' | 'hour' | 'day';
type GroupBy = 'key' | 'model';

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

const WINDOWS: Record<Granularity, { ms: number; count: number; label: string }> = {
  minute: { ms: 60_000, count: 60, label: 'the last 60 minutes' },
  hour: { ms: 3_600_000, count: 48, label: 'the last 48 hours' },
  day: { ms: 86_400_000, count: 30, label: 'the last 30 days' },
};

const val = (e: Event) => (e.target as HTMLSelectElement).value;

function range(g: Granularity, now = Date.now()) {
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

export function UsagePage() {
  const ws = useWorkspace();
  const [granularity, setGranularity] = useState<Granularity>('minute');
  const [groupBy, setGroupBy] = useState<GroupBy>('key');
  const [points, setPoints] = useState<UsagePoint[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [live, setLive] = useState<'connecting' | 'live' | 'polling'>('connecting');
  const [updated, setUpdated] = useState<number | null>(null);
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [win, setWin] = useState(() => range(granularity));
  const seq = useRef(0);

  const url = (g: Granularity, by: GroupBy, r: { from: number; to: number }, extra = '') =>
    `/v1/workspaces/${enc(ws.workspaceId)}/usage?granularity=${g}&groupBy=${by}&from=${enc(new Date(r.from).toISOString())}&to=${enc(
      new Date(r.to).toISOString(),
    )}${extra}`;

  const load = useRef<() => void>(() => undefined);
  load.current = () => {
    const r = range(granularity);
    const mine = ++seq.current;
    get(url(granularity, groupBy, r)).then(
      (raw) => {
        if (mine !== seq.current) return;
        setWin(r);
        setPoints(normaliseUsage(raw));
        setError(null);
        setUpdated(Date.now());
      },
      (e) => mine === seq.current && setError(e),
    );
  };

  useEffect(() => {
    setPoints(null);
    load.current();
  }, [ws.workspaceId, granularity, groupBy]);

  useEffect(() => {
    listKeys(ws.workspaceId).then(setKeys, () => undefined);
  }, [ws.workspaceId]);

  // Live: the usage stream (SSE) says when a request was billed — published in the same MULTI that
  // counted it — and the page re-reads the series (bursts coalesced over 50 ms). Without the stream
  // it re-reads every 5 s.
  useEffect(() => {
    let timer: number | undefined;
    const soon = () => {
      if (timer !== undefined) return;
      timer = window.setTimeout(() => {
        timer = undefined;
        load.current();
      }, 50);
    };
    let poll: number | undefined;
    const es = new EventSource(`/v1/workspaces/${enc(ws.workspaceId)}/usage/live`);
    es.onopen = () => {
      setLive('live');
      if (poll !== undefined) window.clearInterval(poll);
      poll = undefined;
    };
    es.addEventListener('usage', soon);
    es.onerror = () => {
      setLive('polling');
      if (poll === undefined) poll = window.setInterval(() => load.current(), 5000);
    };
    return () => {
      es.close();
      if (poll !== undefined) window.clearInterval(poll);
      if (timer !== undefined) window.clearTimeout(timer);
    };
  }, [ws.workspaceId]);

  // The window slides when a new bucket starts.
  useEffect(() => {
    const tick = window.setInterval(() => {
      if (range(granularity).from !== win.from) load.current();
    }, 5_000);
    return () => window.clearInterval(tick);
  }, [granularity, win.from]);

  const groupName = useMemo(() => {
    const names = new Map(keys.map((k) => [k.keyId, `${k.name} (${k.prefix}…${k.last4})`]));
    // A key missing from the live list was deleted; the usage API still names it.
    for (const p of points ?? []) if (p.label && !names.has(p.group)) names.set(p.group, `${p.label} (deleted key)`);
    return (g: string) => (groupBy === 'key' ? (names.get(g) ?? `deleted key ${g.slice(0, 8)}`) : g);
  }, [keys, groupBy, points]);

  const charts = useMemo(() => {
    if (!points) return null;
    const idx = new Map(win.times.map((t, i) => [t, i]));
    const groups = [...new Set(points.map((p) => p.group))].sort();
    const mk = () => groups.map((g) => ({ name: groupName(g), values: win.times.map(() => 0) }));
    const requests: Series[] = mk();
    const tokens: Series[] = mk();
    const costNano = groups.map(() => win.times.map(() => 0n));
    for (const p of points) {
      const gi = groups.indexOf(p.group);
      const ti = idx.get(Math.floor(p.start / WINDOWS[granularity].ms) * WINDOWS[granularity].ms);
      if (ti === undefined) continue;
      requests[gi].values[ti] += p.requests;
      tokens[gi].values[ti] += p.inputTokens + p.outputTokens;
      costNano[gi][ti] += p.cost;
    }
    const cost: Series[] = groups.map((g, gi) => ({ name: groupName(g), values: costNano[gi].map(nanoToNumber) }));
    const totals = {
      requests: points.reduce((a, p) => a + p.requests, 0),
      inputTokens: points.reduce((a, p) => a + p.inputTokens, 0),
      outputTokens: points.reduce((a, p) => a + p.outputTokens, 0),
      cost: formatUsd(points.reduce((a, p) => a + p.cost, 0n)),
    };
    return { requests, tokens, cost, totals, groups };
  }, [points, win, groupName, granularity]);

  const timeLabel = (t: number) => {
    const d = new Date(t);
    if (granularity === 'day') return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
    if (granularity === 'hour') return d.toLocaleString(undefined, { day: 'numeric', hour: '2-digit', minute: '2-digit' });
    return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  };

  const downloadCsv = () => {
    if (!points) return;
    const rows = [['bucket_start_utc', 'granularity', groupBy, 'requests', 'input_tokens', 'output_tokens', 'cost_usd']];
    for (const p of [...points].sort((a, b) => a.start - b.start || a.group.localeCompare(b.group))) {
      rows.push([new Date(p.start).toISOString(), granularity, groupBy === 'key' ? groupName(p.group) : p.group, String(p.requests), String(p.inputTokens), String(p.outputTokens), formatUsd(p.cost)]);
    }
    const csv = rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
    a.download = `usage-${ws.name.replace(/[^A-Za-z0-9_-]+/g, '_')}-${granularity}-by-${groupBy}.csv`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };

  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <p class="lede">
        Requests, tokens and cost of the workspace <strong>{ws.name}</strong> over {WINDOWS[granularity].label}, updated live after each request.
      </p>
      <div class="card usage-controls">
        <Field label="Time buckets">
          {(p) => (
            <select {...p} name="granularity" value={granularity} onChange={(e) => setGranularity(val(e) as Granularity)}>
              <option value="minute">Per minute (last hour)</option>
              <option value="hour">Per hour (last 48 hours)</option>
              <option value="day">Per day (last 30 days)</option>
            </select>
          )}
        </Field>
        <Field label="Break down by">
          {(p) => (
            <select {...p} name="groupBy" value={groupBy} onChange={(e) => setGroupBy(val(e) as GroupBy)}>
              <option value="key">API key</option>
              <option value="model">Model</option>
            </select>
          )}
        </Field>
        <button type="button" class="button" onClick={downloadCsv} disabled={!points}>
          Download CSV
        </button>
        <p class={`live ${live === 'live' ? 'live-on' : ''}`} role="status" data-testid="live-status">
          <span class="live-dot" aria-hidden="true" />
          {live === 'live' ? 'Live' : live === 'polling' ? 'Reconnecting (refreshing every 5 s)' : 'Connecting…'}
          {updated && <span class="visually-hidden"> — updated {new Date(updated).toLocaleTimeString()}</span>}
        </p>
      </div>
      <ErrorMessage error={error} />
      {!charts ? (
        !error && <Loading what="Loading usage" />
      ) : (
        <>
          <div class="stats" aria-label="Totals">
            <div class="stat">
              <p class="stat-label">Requests</p>
              <p class="stat-value" data-testid="total-requests">
                {integer(charts.totals.requests)}
              </p>
            </div>
            <div class="stat">
              <p class="stat-label">Input tokens</p>
              <p class="stat-value">{integer(charts.totals.inputTokens)}</p>
            </div>
            <div class="stat">
              <p class="stat-label">Output tokens</p>
              <p class="stat-value">{integer(charts.totals.outputTokens)}</p>
            </div>
            <div class="stat">
              <p class="stat-label">Cost</p>
              <p class="stat-value" data-testid="total-cost">
                {usd(charts.totals.cost)}
              </p>
            </div>
          </div>
          <div class="charts">
            <div class="card">
              <BarChart integers testId="chart-requests" title={`Requests per ${granularity}`} times={win.times} series={charts.requests} format={(n) => integer(Math.round(n))} timeLabel={timeLabel} />
            </div>
            <div class="card">
              <BarChart integers testId="chart-tokens" title={`Tokens per ${granularity}`} times={win.times} series={charts.tokens} format={(n) => integer(Math.round(n))} timeLabel={timeLabel} />
            </div>
            <div class="card">
              <BarChart testId="chart-cost" title={`Cost per ${granularity} (USD)`} times={win.times} series={charts.cost} format={(n) => usd(n.toFixed(6), { maxDecimals: 6 })} totalText={usd(charts.totals.cost)} timeLabel={timeLabel} />
            </div>
          </div>
          <details class="card">
            <summary>Show the numbers as a table</summary>
            <div class="table-wrap">
              <table class="table">
                <caption class="visually-hidden">Usage per {granularity}</caption>
                <thead>
                  <tr>
                    <th scope="col">{granularity === 'day' ? 'Day' : 'Time'}</th>
                    <th scope="col">{groupBy === 'key' ? 'Key' : 'Model'}</th>
                    <th scope="col" class="num">Requests</th>
                    <th scope="col" class="num">Input tokens</th>
                    <th scope="col" class="num">Output tokens</th>
                    <th scope="col" class="num">Cost</th>
                  </tr>
                </thead>
                <tbody>
                  {[...(points ?? [])]
                    .sort((a, b) => b.start - a.start)
                    .map((p) => (
                      <tr key={`${p.start}-${p.group}`}>
                        <td>{timeLabel(p.start)}</td>
                        <td>{groupName(p.group)}</td>
                        <td class="num">{integer(p.requests)}</td>
                        <td class="num">{integer(p.inputTokens)}</td>
                        <td class="num">{integer(p.outputTokens)}</td>
                        <td class="num">{usd(formatUsd(p.cost))}</td>
                      </tr>
                    ))}
                </tbody>
              </table>
            </div>
          </details>
        </>
      )}
    </section>
  );
}

function csvCell(raw: string): string {
  // A cell starting with = + - @ would be a formula in a spreadsheet: quote it as text.
  const v = /^[=+\-@\t\r]/.test(raw) && !/^-?\d/.test(raw) ? `'${raw}` : raw;
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}
