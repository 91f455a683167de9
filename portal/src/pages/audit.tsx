import { useState } from 'preact/hooks';
import { enc, get } from '../api';
import { ErrorMessage, Field, Loading, Message, useLoad } from '../components/ui';
import { dateTime, usd } from '../format';
import { useWorkspace } from '../state';
import type { AuditEntry, AuditPage } from '../api-types';

/** One entry of GET /v1/workspaces/:ws/audit (docs/ACCOUNTS.md, "Audit log"). */
export type { AuditEntry } from '../api-types';

const PAGE = 50;

const ACTIONS: Record<string, string> = {
  'workspace.created': 'Created the workspace',
  'workspace.renamed': 'Renamed the workspace',
  'member.joined': 'Joined',
  'member.removed': 'Removed a member',
  'member.left': 'Left the workspace',
  'member.role_changed': 'Changed a role',
  'invitation.sent': 'Sent an invitation',
  'invitation.accepted': 'Accepted an invitation',
  'invitation.declined': 'Declined an invitation',
  'invitation.revoked': 'Revoked an invitation',
  'key.created': 'Created a key',
  'key.deleted': 'Deleted a key',
  'key.renamed': 'Renamed a key',
  'key.budget_changed': 'Changed a key’s budget',
  'key.rate_limit_changed': 'Changed a key’s rate limit',
  'key.rolled': 'Rolled a key',
  'billing.payment_method_attached': 'Saved a payment method',
  'billing.deposit_requested': 'Started a deposit',
  'billing.deposit': 'Deposit',
  'billing.auto_reload_configured': 'Set auto-reload',
  'billing.auto_reload_triggered': 'Auto-reload started',
  'billing.auto_reload': 'Auto-reload',
  'billing.auto_reload_suspended': 'Auto-reload suspended',
  'webhook.endpoint_registered': 'Added a webhook endpoint',
  'webhook.secret_rotated': 'Rotated a webhook secret',
  'webhook.endpoint_deleted': 'Deleted a webhook endpoint',
  'webhook.endpoint_disabled': 'Webhook endpoint disabled',
  'webhook.endpoint_enabled': 'Enabled a webhook endpoint',
  'webhook.replay_requested': 'Replayed webhook events',
  'webhook.balance_threshold_set': 'Set the low-balance alert',
};

const SYSTEM_NAMES: Record<string, string> = { 'stripe-webhook': 'Stripe', anonymous: 'someone signed out', 'webhook-delivery': 'webhook delivery' };

export function actorText(a: AuditEntry['actor']): string {
  switch (a.type) {
    case 'user':
      return a.name || a.email || 'a former user';
    case 'apiKey':
      return `key ${a.name ?? 'deleted'}${a.last4 ? ` (…${a.last4})` : ''}`;
    case 'operator':
      return 'an operator';
    case 'system':
      return SYSTEM_NAMES[a.name] ?? (a.name.replace(/^(worker|system):/, '').replace(/[-_]/g, ' ') || 'the system');
  }
}

export function targetText(t: AuditEntry['target']): string {
  if (!t) return '—';
  switch (t.type) {
    case 'apiKey':
      return `key ${t.name ?? t.id.slice(0, 8)}${t.last4 ? ` (…${t.last4})` : ''}`;
    case 'member':
      return t.name || t.email || 'a former member';
    case 'invitation':
      return t.email ? `invitation to ${t.email}` : 'an invitation';
    case 'paymentMethod':
      return `card ${t.brand ?? ''} …${t.last4 ?? ''}`.replace(/\s+/g, ' ');
    case 'workspace':
      return t.name ?? 'the workspace';
    case 'deposit':
      return 'a deposit';
    case 'autoReload':
      return 'auto-reload';
    case 'webhookEndpoint':
      return `webhook endpoint ${t.id}`;
    default:
      return t.name ?? t.type;
  }
}

const MONEY = new Set(['amount', 'threshold', 'monthlyCap', 'monthlyBudget', 'budget', 'previousBudget', 'balance']);
const LABELS: Record<string, string> = {
  previousRole: 'was',
  previousName: 'was',
  previousBudget: 'was',
  previousPeriod: 'was',
  period: 'per',
  monthlyBudget: 'budget',
  monthlyCap: 'monthly cap',
  requestsPerMinute: 'per minute',
  expiresAt: 'expires',
  gracePeriodSeconds: 'old secret works for (s)',
};

/** The change an entry records, in a line: "role admin, was member", "budget $50.00, was none". */
export function detailsText(details: Record<string, unknown>): string {
  return Object.entries(details)
    .map(([k, v]) => {
      const label = LABELS[k] ?? k;
      const value =
        v === null || v === undefined ? 'none' : MONEY.has(k) && typeof v === 'string' ? usd(v) : Array.isArray(v) ? v.join(' ') : typeof v === 'object' ? JSON.stringify(v) : String(v);
      return `${label} ${value}`;
    })
    .join(', ');
}

/** The last 12 UTC calendar months, newest first: the periods finance exports. */
export function recentMonths(now = new Date()): { value: string; label: string; from: string; to: string }[] {
  return Array.from({ length: 12 }, (_, i) => {
    const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - i, 1));
    const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
    return {
      value: from.toISOString().slice(0, 7),
      label: from.toLocaleDateString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' }),
      from: from.toISOString(),
      to: to.toISOString(),
    };
  });
}

export function AuditPage() {
  const ws = useWorkspace();
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [period, setPeriod] = useState('');
  const months = recentMonths();
  const month = months.find((m) => m.value === period);
  const base = `/v1/workspaces/${enc(ws.workspaceId)}/audit`;
  const span = month ? `&from=${enc(month.from)}&to=${enc(month.to)}` : '';
  const pages = useLoad(
    async (signal) => {
      const out: AuditPage[] = [];
      for (const c of cursors) out.push(await get<AuditPage>(`${base}?limit=${PAGE}${span}${c ? `&cursor=${enc(c)}` : ''}`, { signal }));
      return out;
    },
    [ws.workspaceId, cursors.length, period],
  );

  if (ws.role !== 'admin') {
    return (
      <section aria-labelledby="audit-title">
        <h1 id="audit-title">Audit log</h1>
        <Message kind="info">Only admins of {ws.name} can read its audit log.</Message>
      </section>
    );
  }

  const entries = (pages.data ?? []).flatMap((p) => p.entries);
  const next = pages.data?.[pages.data.length - 1]?.nextCursor ?? null;
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <p class="lede">
        Who did what in <strong>{ws.name}</strong>, newest first: members, invitations, keys and billing. Secrets and hashes are never recorded.
      </p>
      <div class="card usage-controls audit-controls">
        <Field label="Period (UTC)">
          {(p) => (
            <select
              {...p}
              name="period"
              value={period}
              onChange={(e) => {
                setPeriod((e.target as HTMLSelectElement).value);
                setCursors([null]);
              }}
            >
              <option value="">All time</option>
              {months.map((m) => (
                <option key={m.value} value={m.value}>
                  {m.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <a class="button" href={`${base}?format=csv${span}`} download>
          Download CSV{month ? ` of ${month.label}` : ''}
        </a>
      </div>
      <div class="card">
        {pages.loading && !pages.data ? (
          <Loading what="Loading the audit log" />
        ) : pages.error ? (
          <ErrorMessage error={pages.error} />
        ) : entries.length === 0 ? (
          <p class="muted">{month ? `Nothing happened in ${month.label}.` : 'Nothing has happened yet.'}</p>
        ) : (
          <>
            <div class="table-wrap">
              <table class="table table-stack" aria-label="Audit log, newest first">
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Who</th>
                    <th scope="col">What</th>
                    <th scope="col">Target</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {entries.map((e) => (
                    <tr key={e.id} data-testid="audit-row" data-action={e.action}>
                      <th scope="row">{dateTime(e.time)}</th>
                      <td data-label="Who">{actorText(e.actor)}</td>
                      <td data-label="What">{ACTIONS[e.action] ?? e.action}</td>
                      <td data-label="Target">{targetText(e.target)}</td>
                      <td data-label="Outcome">{e.outcome === 'failed' ? <strong class="failed">failed</strong> : 'succeeded'}</td>
                      <td data-label="Details" class="audit-details">
                        {detailsText(e.details) || '—'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <p class="muted">
              {entries.length} {entries.length === 1 ? 'entry' : 'entries'} shown{next ? '; older ones follow' : ', the whole log'}.
            </p>
            {next && (
              <div class="actions">
                <button type="button" class="button" disabled={pages.loading} onClick={() => setCursors((c) => [...c, next])}>
                  {pages.loading ? 'Loading…' : 'Show older entries'}
                </button>
              </div>
            )}
          </>
        )}
      </div>
    </section>
  );
}
