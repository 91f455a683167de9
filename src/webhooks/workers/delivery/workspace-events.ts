import { isBudgetPeriod, periodWindow, type BudgetPeriod } from '../../../platform/budget-periods';
import type { EventStore, RecordedEvent } from '../../../platform/eventstore/port';
import { streams } from '../../../platform/streams';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../event-types';

const PAGE = 500;

/** Which of a workspace's streams hold each webhook type's stored events. */
const STREAM_OF: Record<WebhookEventType, 'workspace' | 'billing' | 'balance-alerts' | 'key-budget'> = {
  'deposit.succeeded': 'billing',
  'deposit.failed': 'billing',
  'auto_reload.succeeded': 'billing',
  'auto_reload.failed': 'billing',
  'auto_reload.suspended': 'billing',
  'key.created': 'workspace',
  'key.rolled': 'workspace',
  'key.deleted': 'workspace',
  'key.budget_80_percent': 'key-budget',
  'key.budget_100_percent': 'key-budget',
  'member.joined': 'workspace',
  'member.removed': 'workspace',
  'member.left': 'workspace',
  'balance.below_threshold': 'balance-alerts',
  'credit.granted': 'billing',
  'credit.expired': 'billing',
};

/** The stream's events with a position in [from, to], read a page at a time (positions grow with revisions). */
async function inRange(store: Pick<EventStore, 'readStream'>, stream: string, from: bigint, to: bigint): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for (let revision = 0n; ;) {
    const page = await store.readStream(stream, { from: revision, maxCount: PAGE });
    for (const e of page) {
      if (e.position > to) return out;
      if (e.position >= from) out.push(e);
    }
    if (page.length < PAGE) return out;
    revision = page[page.length - 1].revision + 1n;
  }
}

/**
 * The key-budget alert streams of the workspace's keys (one per key, budget period and threshold):
 * every period of every kind a key had a budget in, from the time it got one (or `since`, if later)
 * to `until`.
 */
function keyBudgetStreams(workspaceEvents: RecordedEvent[], since: Date | null, until: Date): string[] {
  const first = new Map<string, Date>(); // "keyId|period" → when the key first had a budget of that period
  for (const e of workspaceEvents) {
    const d = e.data as { keyId?: string; period?: unknown };
    let period: BudgetPeriod | null = null;
    if (e.type === 'ApiKeyBudgetChanged') period = 'monthly';
    else if (e.type === 'ApiKeyBudgetChangedV2' && isBudgetPeriod(d.period)) period = d.period;
    if (!period || !d.keyId) continue;
    const k = `${d.keyId}|${period}`;
    if (!first.has(k)) first.set(k, new Date(e.created));
  }
  const out: string[] = [];
  for (const [k, at] of first) {
    const [keyId, period] = k.split('|') as [string, BudgetPeriod];
    for (let t = since && since > at ? since : at; t <= until;) {
      const w = periodWindow(period, t);
      out.push(streams.keyBudgetThreshold(keyId, w.id, 80), streams.keyBudgetThreshold(keyId, w.id, 100));
      t = w.resetsAt;
    }
  }
  return out;
}

/**
 * What a replay may send: the workspace's own events of the endpoint's types with a position in
 * [from, to], by position. Only the workspace's streams are read (workspace-, billing-,
 * balance-alerts- and its keys' budget alerts, each only when a subscribed type lives there), never
 * the log of every tenant.
 */
export async function workspaceEventsFor(
  store: Pick<EventStore, 'readStream'>,
  q: { workspaceId: string; eventTypes: string[]; from: bigint; to: bigint; since: Date | null; until: Date },
): Promise<RecordedEvent[]> {
  const kinds = new Set(q.eventTypes.map((t) => STREAM_OF[t as WebhookEventType]).filter(Boolean));
  const stored = new Set(q.eventTypes.map((t) => WEBHOOK_EVENT_TYPES[t as WebhookEventType]).filter(Boolean) as string[]);
  const names: string[] = [];
  if (kinds.has('billing')) names.push(streams.billing(q.workspaceId));
  if (kinds.has('balance-alerts')) names.push(streams.balanceAlerts(q.workspaceId));
  let found: RecordedEvent[] = [];
  if (kinds.has('workspace') || kinds.has('key-budget')) {
    // The workspace stream names the keys, so it is read whole when budget alerts are asked for.
    const ws = await inRange(store, streams.workspace(q.workspaceId), kinds.has('key-budget') ? 0n : q.from, q.to);
    found = ws.filter((e) => e.position >= q.from);
    if (kinds.has('key-budget')) names.push(...keyBudgetStreams(ws, q.since, q.until));
  }
  for (const name of names) found.push(...(await inRange(store, name, q.from, q.to)));
  return found
    .filter((e) => stored.has(e.type) && (q.since === null || Date.parse(e.created) >= q.since.getTime()))
    .sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0));
}
