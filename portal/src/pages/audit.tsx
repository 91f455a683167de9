import { useState } from 'preact/hooks';
import { enc, get } from '../api';
import { ErrorMessage, Field, Loading, Message, useLoad } from '../components/ui';
import { dateTimeSeconds } from '../format';
import { useWorkspace } from '../state';
import type { AuditPage } from '../api-types';
import { actorText, detailsText, targetText } from './audit-text';

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
        Who did what in <strong>{ws.name}</strong>, newest first: members, invitations, keys and billing. Secrets and hashes are never
        recorded.
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
                      <th scope="row">
                        <time dateTime={e.time}>{dateTimeSeconds(e.time)}</time>
                      </th>
                      <td data-label="Who">{actorText(e.actor)}</td>
                      <td data-label="What">{ACTIONS[e.action] ?? e.action}</td>
                      <td data-label="Target">{targetText(e.target, e.details)}</td>
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
