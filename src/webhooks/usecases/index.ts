import type { EventMetadata } from '../../platform/eventstore/port';
import { DomainError } from '../../platform/errors';
import type { Services } from '../../services';
import { webhookEventTypes } from '../event-types';
import { clearDisabledNotice } from '../disabled-notice';
import { targetProblem } from '../target-guard';
import { endpointOf, endpointsOf, newWebhookSecret, runWebhookCommand } from './endpoint-command';

export { endpointOf, endpointsOf } from './endpoint-command';

type Deps = Pick<Services, 'store' | 'newId' | 'config'>;
type NoticeDeps = Pick<Services, 'redis' | 'ks'>;

/** An admin registers an endpoint; the answer carries the secret, the only time it is shown. */
export async function registerEndpoint(
  s: Deps,
  cmd: { workspaceId: string; url: string; eventTypes: string[]; by: string; metadata: EventMetadata },
): Promise<{ endpointId: string; secret: string }> {
  const unknown = cmd.eventTypes.find((t) => !(webhookEventTypes as string[]).includes(t));
  if (unknown) throw new DomainError('invalid', `Unknown event type ${unknown}; known: ${webhookEventTypes.join(', ')}`, 'eventTypes');
  const problem = await targetProblem(cmd.url, s.config.WEBHOOKS_ALLOW_PRIVATE_TARGETS);
  if (problem) throw new DomainError('invalid', problem, 'url');
  const endpointId = `whe_${s.newId().replace(/-/g, '')}`;
  const secret = newWebhookSecret();
  const { workspaceId, url, by } = cmd;
  await runWebhookCommand(
    s,
    workspaceId,
    { type: 'RegisterEndpoint', data: { workspaceId, endpointId, url, eventTypes: [...new Set(cmd.eventTypes)], secret, by } },
    cmd.metadata,
  );
  return { endpointId, secret };
}

/** A new secret replaces the old one at once; the answer shows it, once. */
export async function rotateEndpointSecret(
  s: Deps,
  cmd: { workspaceId: string; endpointId: string; by: string; metadata: EventMetadata },
): Promise<{ secret: string }> {
  const secret = newWebhookSecret();
  const { workspaceId, endpointId, by } = cmd;
  await runWebhookCommand(s, workspaceId, { type: 'RotateEndpointSecret', data: { workspaceId, endpointId, secret, by } }, cmd.metadata);
  return { secret };
}

export async function deleteEndpoint(
  s: Deps & NoticeDeps,
  cmd: { workspaceId: string; endpointId: string; by: string; metadata: EventMetadata },
): Promise<void> {
  const { workspaceId, endpointId, by } = cmd;
  await runWebhookCommand(s, workspaceId, { type: 'DeleteEndpoint', data: { workspaceId, endpointId, by } }, cmd.metadata);
  await clearDisabledNotice(s, workspaceId, endpointId);
}

/** Every attempt of a delivery failed: the endpoint is disabled (once). Returns whether this call disabled it. */
export async function disableEndpoint(
  s: Pick<Services, 'store' | 'newId'>,
  cmd: { workspaceId: string; endpointId: string; eventId: string; reason: string },
): Promise<boolean> {
  const done = await runWebhookCommand(
    s,
    cmd.workspaceId,
    { type: 'DisableEndpoint', data: cmd },
    { actor: 'webhook-delivery', causationId: cmd.eventId },
  );
  return done.events.length > 0;
}

export async function requireEndpoint(s: Pick<Services, 'store'>, workspaceId: string, endpointId: string) {
  const ep = await endpointOf(s, workspaceId, endpointId);
  if (!ep) throw new DomainError('not_found', 'No webhook endpoint with this id');
  return ep;
}

export { endpointsOf as listEndpoints };

/** An admin enables a disabled endpoint: events stored from then on reach it (a replay sends what it missed). */
export async function enableEndpoint(
  s: Deps & NoticeDeps,
  cmd: { workspaceId: string; endpointId: string; by: string; metadata: EventMetadata },
): Promise<void> {
  const { workspaceId, endpointId, by } = cmd;
  await runWebhookCommand(s, workspaceId, { type: 'EnableEndpoint', data: { workspaceId, endpointId, by } }, cmd.metadata);
  await clearDisabledNotice(s, workspaceId, endpointId);
}

export { setBalanceThreshold, balanceThresholdOf } from './balance-threshold';
export { startReplay } from './replay';
