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
export type WebhookEndpointSecretRotated = Event<'WebhookEndpointSecretRotated', { workspaceId: string; endpointId: string; secret: string; by: string }>;
export type WebhookEndpointDeleted = Event<'WebhookEndpointDeleted', { workspaceId: string; endpointId: string; by: string }>;
/** Every attempt of one delivery failed: the endpoint gets nothing more until it is registered again. */
export type WebhookEndpointDisabled = Event<
  'WebhookEndpointDisabled',
  { workspaceId: string; endpointId: string; eventId: string; reason: string }
>;

export type WebhookEvent = WebhookEndpointRegistered | WebhookEndpointSecretRotated | WebhookEndpointDeleted | WebhookEndpointDisabled;
