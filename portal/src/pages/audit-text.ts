import type { AuditEntry } from '../api-types';
import { usd } from '../format';

/** An audit entry's actor, target and details in words (the audit page's columns). */

const SYSTEM_NAMES: Record<string, string> = {
  'stripe-webhook': 'Stripe',
  anonymous: 'someone signed out',
  'webhook-delivery': 'webhook delivery',
};

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

/** What an entry acted on; a deposit names its id and amount (from the entry's details). */
export function targetText(t: AuditEntry['target'], details: Record<string, unknown> = {}): string {
  if (!t) return '—';
  if (t.type === 'deposit') return `deposit ${t.id}${typeof details.amount === 'string' ? ` of ${usd(details.amount)}` : ''}`;
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
        v === null || v === undefined
          ? 'none'
          : MONEY.has(k) && typeof v === 'string'
            ? usd(v)
            : Array.isArray(v)
              ? v.join(' ')
              : typeof v === 'object'
                ? JSON.stringify(v)
                : String(v);
      return `${label} ${value}`;
    })
    .join(', ');
}
