import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { enc, get } from '../../api';
import { formatUsd } from '../../amount';
import { BarChart, type Series } from '../../components/chart';
import { ErrorMessage, Field, Loading } from '../../components/ui';
import { integer, nanoToNumber, usd } from '../../format';
import { listKeys, type ApiKey } from '../../resources';
import { useWorkspace } from '../../state';
import type { Usage } from '../../api-types';
import { GROUP_LABELS, range, usagePoints, WINDOWS, type Granularity, type GroupBy, type UsagePoint } from './data';

const val = (e: Event) => (e.target as HTMLSelectElement).value;

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
    get<Usage>(url(granularity, groupBy, r)).then(
      (usage) => {
        if (mine !== seq.current) return;
        setWin(r);
        setPoints(usagePoints(usage));
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
    const members = new Map<string, string>();
    for (const p of points ?? []) if (p.label && groupBy === 'member') members.set(p.group, p.label);
    return (g: string) =>
      groupBy === 'key' ? (names.get(g) ?? `deleted key ${g.slice(0, 8)}`) : groupBy === 'member' ? (members.get(g) ?? g) : g;
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

  // The exports are the API's own (the session cookie authenticates a plain link): the same window and grouping as the charts.
  const csvHref = url(granularity, groupBy, win, '&format=csv');
  const focusHref = `/v1/workspaces/${enc(ws.workspaceId)}/usage?granularity=${granularity}&from=${enc(new Date(win.from).toISOString())}&to=${enc(
    new Date(win.to).toISOString(),
  )}&format=focus`;

  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <p class="lede">
        Requests, tokens and cost of the workspace <strong>{ws.name}</strong> over {WINDOWS[granularity].label}, updated live after each
        request.
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
              {(['key', 'member', 'config', 'endpoint'] as const).map((g) => (
                <option value={g}>{GROUP_LABELS[g]}</option>
              ))}
            </select>
          )}
        </Field>
        <a class="button" href={csvHref} download data-testid="download-csv">
          Download CSV
        </a>
        <a
          class="button"
          href={focusHref}
          download
          data-testid="download-focus"
          title="FOCUS-style cost export: one row per API key and bucket"
        >
          Download FOCUS cost CSV
        </a>
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
              <BarChart
                integers
                testId="chart-requests"
                title={`Requests per ${granularity}`}
                times={win.times}
                series={charts.requests}
                format={(n) => integer(Math.round(n))}
                timeLabel={timeLabel}
              />
            </div>
            <div class="card">
              <BarChart
                integers
                testId="chart-tokens"
                title={`Tokens per ${granularity}`}
                times={win.times}
                series={charts.tokens}
                format={(n) => integer(Math.round(n))}
                timeLabel={timeLabel}
              />
            </div>
            <div class="card">
              <BarChart
                testId="chart-cost"
                title={`Cost per ${granularity} (USD)`}
                times={win.times}
                series={charts.cost}
                format={(n) => usd(n.toFixed(6), { maxDecimals: 6 })}
                totalText={usd(charts.totals.cost)}
                timeLabel={timeLabel}
              />
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
                    <th scope="col">{GROUP_LABELS[groupBy]}</th>
                    <th scope="col" class="num">
                      Requests
                    </th>
                    <th scope="col" class="num">
                      Input tokens
                    </th>
                    <th scope="col" class="num">
                      Output tokens
                    </th>
                    <th scope="col" class="num">
                      Cost
                    </th>
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
