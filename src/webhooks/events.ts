import type { Event } from '../platform/event';

/**
 * Webhook endpoints of a workspace, in the stream webhooks-{workspaceId} (not workspace-{id}: the
 * signing secrets stay out of the stream every workspace command and projection reads, and
 * registering an endpoint never conflicts with a key or member change).
 */
export type WebhookEndpointRegistered = Event<
  'WebhookEndpointRegistered',
  { workspaceId: string; endpointId: string; url: string; eventTypes: string[]; secret: string; by: string }
>;
export type WebhookEndpointSecretRotated = Event<
  'WebhookEndpointSecretRotated',
  { workspaceId: string; endpointId: string; secret: string; by: string }
>;
export type WebhookEndpointDeleted = Event<'WebhookEndpointDeleted', { workspaceId: string; endpointId: string; by: string }>;
/** Every attempt of one delivery failed: the endpoint gets nothing more until an admin enables it again. */
export type WebhookEndpointDisabled = Event<
  'WebhookEndpointDisabled',
  { workspaceId: string; endpointId: string; eventId: string; reason: string }
>;

/** An admin enabled a disabled endpoint: events stored from then on are sent to it again. */
export type WebhookEndpointEnabled = Event<'WebhookEndpointEnabled', { workspaceId: string; endpointId: string; by: string }>;
/**
 * The workspace's low-balance alert threshold (nano-USD), or null: no alert. One per workspace;
 * every endpoint subscribed to balance.below_threshold gets the same alert.
 */
export type BalanceAlertThresholdSet = Event<
  'BalanceAlertThresholdSet',
  { workspaceId: string; thresholdNanoUsd: string | null; by: string }
>;

/**
 * An admin asked for a replay of the endpoint's events (its progress lives beside the delivery log
 * in Redis, ../replays.ts): recorded for the audit log. Its id derives from the replay id.
 */
export type WebhookReplayRequested = Event<
  'WebhookReplayRequested',
  { workspaceId: string; endpointId: string; replayId: string; since: string | null; fromPosition: string; toPosition: string; by: string }
>;

export type WebhookEvent =
  | WebhookReplayRequested
  | WebhookEndpointRegistered
  | WebhookEndpointSecretRotated
  | WebhookEndpointDeleted
  | WebhookEndpointDisabled
  | WebhookEndpointEnabled
  | BalanceAlertThresholdSet;

/**
 * In balance-alerts-{workspaceId}: the balance went from at or above the threshold to below it with
 * the debit `causedBy` (an event id). Its own id is derived from `causedBy`, so a crossing is
 * stored once however often it is seen (docs/WEBHOOKS.md, "Balance below a threshold").
 */
export type BalanceThresholdCrossed = Event<
  'BalanceThresholdCrossed',
  { workspaceId: string; thresholdNanoUsd: string; balanceNanoUsd: string; causedBy: string; causedAt: string }
>;
