import type { ProtectedEventType } from '../platform/crypto/protected-store';

/** Signing secrets, sealed with the workspace's secrets key (`workspace:{id}`), wrapped by the master key. */
const workspace = (d: Record<string, unknown>) => `workspace:${String(d.workspaceId)}`;

export const webhooksProtectedEvents: readonly ProtectedEventType[] = [
  { type: 'WebhookEndpointRegistered', storedAs: 'WebhookEndpointRegisteredV2', subject: workspace, fields: ['secret'] },
  { type: 'WebhookEndpointSecretRotated', storedAs: 'WebhookEndpointSecretRotatedV2', subject: workspace, fields: ['secret'] },
];
