import type { RecordedEvent } from '../platform/eventstore/port';

/**
 * The webhook event types a workspace can subscribe to, and the stored events they come from.
 * A payload carries the event's data minus anything secret-like (key hashes).
 */
export const WEBHOOK_EVENT_TYPES = {
  'deposit.succeeded': 'DepositSucceeded',
  'deposit.failed': 'DepositFailed',
  'auto_reload.succeeded': 'AutoReloadSucceeded',
  'auto_reload.failed': 'AutoReloadFailed',
  'auto_reload.suspended': 'AutoReloadSuspended',
  'key.created': 'ApiKeyCreated',
  'key.rolled': 'ApiKeyRolled',
  'key.deleted': 'ApiKeyDeleted',
  'key.budget_80_percent': 'KeyBudget80PercentReached',
  'key.budget_100_percent': 'KeyBudget100PercentReached',
  'member.joined': 'MemberJoined',
  'member.removed': 'MemberRemoved',
  'member.left': 'MemberLeft',
  'balance.below_threshold': 'BalanceThresholdCrossed',
  'credit.granted': 'CreditGranted',
  'credit.expired': 'CreditExpired',
} as const;

export type WebhookEventType = keyof typeof WEBHOOK_EVENT_TYPES;
export const webhookEventTypes = Object.keys(WEBHOOK_EVENT_TYPES) as WebhookEventType[];

const byStoredType = new Map<string, WebhookEventType>(Object.entries(WEBHOOK_EVENT_TYPES).map(([k, v]) => [v, k as WebhookEventType]));
export const storedEventTypes = [...byStoredType.keys()];

const SECRET_LIKE = /hash|secret|password/i;

export interface WebhookPayload {
  type: WebhookEventType;
  timestamp: string;
  data: Record<string, unknown>;
}

/** The payload for a stored event, or null when no webhook type maps to it. */
export function payloadOf(e: Pick<RecordedEvent, 'type' | 'data' | 'created'>): WebhookPayload | null {
  const type = byStoredType.get(e.type);
  if (!type) return null;
  const data = Object.fromEntries(Object.entries(e.data as Record<string, unknown>).filter(([k]) => !SECRET_LIKE.test(k)));
  return { type, timestamp: e.created, data };
}
