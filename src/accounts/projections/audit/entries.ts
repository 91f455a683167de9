import { formatUsd } from '../../../platform/money';
import { streamPrefix } from '../../../platform/streams';
import type { WorkspaceEvent } from '../../events';
import type { BillingEvent } from '../../../billing/events';
import type { RecordedEvent } from '../../../platform/eventstore/port';

/**
 * What one workspace or billing event says in the audit log. Only fields listed here ever reach an
 * entry: a key's hash or prefix, a password hash, a gateway customer id or any data of an event type
 * this file does not know never do. Names of people and keys are resolved when the log is read.
 */
export interface AuditTarget {
  type: 'workspace' | 'member' | 'invitation' | 'apiKey' | 'paymentMethod' | 'deposit' | 'autoReload' | 'webhookEndpoint' | 'creditGrant';
  id: string;
  name?: string;
  email?: string;
  last4?: string;
  brand?: string;
}

export interface StoredAuditEntry {
  id: string;
  time: string;
  /** metadata.actor as written: a user id, `apikey:<keyId>`, `operator`, `worker:…`, `system:…`, `stripe-webhook`. */
  actor: string | null;
  action: string;
  target: AuditTarget | null;
  outcome: 'succeeded' | 'failed';
  details: Record<string, unknown>;
}

type D = Record<string, unknown>;
const str = (v: unknown) => (typeof v === 'string' ? v : '');
const usdOf = (v: unknown) => (typeof v === 'string' && /^-?\d+$/.test(v) ? formatUsd(BigInt(v)) : null);

type Mapping = (d: D) => { action: string; target: AuditTarget | null; details?: D; outcome?: 'failed' };

const member = (d: D): AuditTarget => ({ type: 'member', id: str(d.userId) });
const invitation = (d: D): AuditTarget => ({ type: 'invitation', id: str(d.invitationId) });
const apiKey = (d: D): AuditTarget => ({ type: 'apiKey', id: str(d.keyId) });
const endpoint = (d: D): AuditTarget => ({ type: 'webhookEndpoint', id: str(d.endpointId) });
const workspace = (d: D): AuditTarget => ({
  type: 'workspace',
  id: str(d.workspaceId),
  ...(typeof d.name === 'string' ? { name: d.name } : {}),
});

/** Every workspace and billing event type must have a mapping (the compiler checks), so none is left out of the log. */
const MAPPINGS: { [T in WorkspaceEvent['type'] | BillingEvent['type']]: Mapping } & Record<string, Mapping> = {
  WorkspaceCreated: (d) => ({ action: 'workspace.created', target: workspace(d), details: { name: d.name, personal: d.personal } }),
  WorkspaceRenamed: (d) => ({ action: 'workspace.renamed', target: workspace(d), details: { name: d.name } }),
  MemberJoined: (d) => ({ action: 'member.joined', target: member(d), details: { role: d.role } }),
  MemberRemoved: (d) => ({ action: 'member.removed', target: member(d) }),
  MemberLeft: (d) => ({ action: 'member.left', target: member(d) }),
  MemberRoleChanged: (d) => ({ action: 'member.role_changed', target: member(d), details: { role: d.role, previousRole: d.previousRole } }),
  InvitationSent: (d) => ({ action: 'invitation.sent', target: { ...invitation(d), email: str(d.email) }, details: { email: d.email } }),
  InvitationAccepted: (d) => ({ action: 'invitation.accepted', target: invitation(d) }),
  InvitationDeclined: (d) => ({ action: 'invitation.declined', target: invitation(d) }),
  InvitationRevoked: (d) => ({ action: 'invitation.revoked', target: { ...invitation(d), email: str(d.email) } }),
  ApiKeyCreated: (d) => ({ action: 'key.created', target: apiKey(d), details: { name: d.name, scopes: d.scopes, expiresAt: d.expiresAt } }),
  ApiKeyDeleted: (d) => ({ action: 'key.deleted', target: apiKey(d) }),
  ApiKeyRenamed: (d) => ({ action: 'key.renamed', target: apiKey(d), details: { name: d.name, previousName: d.previousName } }),
  ApiKeyBudgetChanged: (d) => ({
    action: 'key.budget_changed',
    target: apiKey(d),
    details: { monthlyBudget: usdOf(d.monthlyBudgetNanoUsd), previousBudget: usdOf(d.previousBudgetNanoUsd) },
  }),
  ApiKeyBudgetChangedV2: (d) => ({
    action: 'key.budget_changed',
    target: apiKey(d),
    details: {
      budget: usdOf(d.budgetNanoUsd),
      period: d.period,
      previousBudget: usdOf(d.previousBudgetNanoUsd),
      previousPeriod: d.previousPeriod,
    },
  }),
  MemberBudgetChanged: (d) => ({
    action: 'member.budget_changed',
    target: member(d),
    details: {
      budget: usdOf(d.budgetNanoUsd),
      period: d.period,
      previousBudget: usdOf(d.previousBudgetNanoUsd),
      previousPeriod: d.previousPeriod,
    },
  }),
  ApiKeyRolled: (d) => ({
    action: 'key.rolled',
    target: apiKey(d),
    details: typeof d.gracePeriodSeconds === 'number' ? { gracePeriodSeconds: d.gracePeriodSeconds } : {},
  }),
  RateLimitChanged: (d) => ({ action: 'key.rate_limit_changed', target: apiKey(d), details: { requestsPerMinute: d.requestsPerMinute } }),
  PaymentMethodAttached: (d) => ({
    action: 'billing.payment_method_attached',
    target: { type: 'paymentMethod', id: str(d.paymentMethodId), brand: str(d.brand), last4: str(d.last4) },
    details: { gateway: d.gateway },
  }),
  DepositRequested: (d) => ({
    action: 'billing.deposit_requested',
    target: { type: 'deposit', id: str(d.depositId) },
    details: { amount: usdOf(d.amountNanoUsd) },
  }),
  DepositSucceeded: (d) => ({
    action: 'billing.deposit',
    target: { type: 'deposit', id: str(d.depositId) },
    details: { amount: usdOf(d.amountNanoUsd) },
  }),
  DepositFailed: (d) => ({
    action: 'billing.deposit',
    target: { type: 'deposit', id: str(d.depositId) },
    details: { amount: usdOf(d.amountNanoUsd), reason: d.reason, code: d.code },
    outcome: 'failed',
  }),
  AutoReloadConfigured: (d) => ({
    action: 'billing.auto_reload_configured',
    target: null,
    details: {
      enabled: d.enabled,
      threshold: usdOf(d.thresholdNanoUsd),
      amount: usdOf(d.amountNanoUsd),
      monthlyCap: usdOf(d.monthlyCapNanoUsd),
    },
  }),
  AutoReloadTriggered: (d) => ({
    action: 'billing.auto_reload_triggered',
    target: { type: 'autoReload', id: str(d.reloadId) },
    details: { amount: usdOf(d.amountNanoUsd), balance: usdOf(d.balanceNanoUsd) },
  }),
  AutoReloadSucceeded: (d) => ({
    action: 'billing.auto_reload',
    target: { type: 'autoReload', id: str(d.reloadId) },
    details: { amount: usdOf(d.amountNanoUsd) },
  }),
  AutoReloadFailed: (d) => ({
    action: 'billing.auto_reload',
    target: { type: 'autoReload', id: str(d.reloadId) },
    details: { amount: usdOf(d.amountNanoUsd), reason: d.reason, code: d.code },
    outcome: 'failed',
  }),
  AutoReloadSuspended: (d) => ({
    action: 'billing.auto_reload_suspended',
    target: { type: 'autoReload', id: str(d.reloadId) },
    details: { reason: d.reason },
  }),
  CreditGranted: (d) => ({
    action: 'billing.credit_granted',
    target: { type: 'creditGrant', id: str(d.grantId) },
    details: { amount: usdOf(d.amountNanoUsd), category: d.category, priority: d.priority, expiresAt: d.expiresAt, note: d.note },
  }),
  CreditNoteIssued: (d) => ({
    action: 'billing.credit_note_issued',
    target: { type: 'creditGrant', id: str(d.creditNoteId) },
    details: { amount: usdOf(d.amountNanoUsd), requestId: d.requestId, reason: d.reason },
  }),
  CreditExpired: (d) => ({
    action: 'billing.credit_expired',
    target: { type: 'creditGrant', id: str(d.grantId) },
    details: { expiresAt: d.expiresAt },
  }),
  // Webhook administration (stream webhooks-{ws}; named as strings: the webhooks area depends on this one).
  // The signing secret is in two of these events and never in an entry.
  WebhookEndpointRegistered: (d) => ({
    action: 'webhook.endpoint_registered',
    target: endpoint(d),
    details: { url: d.url, eventTypes: d.eventTypes },
  }),
  WebhookEndpointSecretRotated: (d) => ({ action: 'webhook.secret_rotated', target: endpoint(d) }),
  WebhookEndpointDeleted: (d) => ({ action: 'webhook.endpoint_deleted', target: endpoint(d) }),
  WebhookEndpointDisabled: (d) => ({
    action: 'webhook.endpoint_disabled',
    target: endpoint(d),
    details: { reason: d.reason, eventId: d.eventId },
  }),
  WebhookEndpointEnabled: (d) => ({ action: 'webhook.endpoint_enabled', target: endpoint(d) }),
  WebhookReplayRequested: (d) => ({
    action: 'webhook.replay_requested',
    target: endpoint(d),
    details: { replayId: d.replayId, since: d.since, fromPosition: d.fromPosition, toPosition: d.toPosition },
  }),
  BalanceAlertThresholdSet: (d) => ({
    action: 'webhook.balance_threshold_set',
    target: null,
    details: { threshold: usdOf(d.thresholdNanoUsd) },
  }),
};

/** The events the audit log reads: every event of a workspace or billing stream, and webhook administration. */
export type AuditedEvent = WorkspaceEvent | BillingEvent;

// MAPPINGS has exactly these keys (its type says so), so the list is the union's types.
export const AUDITED_TYPES = Object.keys(MAPPINGS) as AuditedEvent['type'][];

/** The entry of an event of `workspace-{ws}`, `billing-{ws}` or `webhooks-{ws}`; null for any other stream. */
export function auditEntry(e: RecordedEvent): StoredAuditEntry | null {
  if (
    !e.stream.startsWith(streamPrefix.workspace) &&
    !e.stream.startsWith(streamPrefix.billing) &&
    !e.stream.startsWith(streamPrefix.webhooks)
  )
    return null;
  const map = MAPPINGS[e.type];
  if (!map) return null;
  const d = e.data as D;
  const m = map(d);
  const by = typeof d.by === 'string' ? d.by : null;
  return {
    id: e.id,
    time: e.created,
    actor: e.metadata?.actor ?? by,
    action: m.action,
    target: m.target,
    outcome: m.outcome ?? 'succeeded',
    details: m.details ?? {},
  };
}
