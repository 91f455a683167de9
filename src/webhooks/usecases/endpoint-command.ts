import { randomBytes } from 'node:crypto';
import { handleCommand, loadState } from '../../platform/eventstore/command-handler';
import type { EventMetadata } from '../../platform/eventstore/port';
import { streams } from '../../platform/streams';
import type { Services } from '../../services';
import { decideEndpoints, endpointsDecider, type Endpoint, type WebhookCommand } from '../endpoints';

export type WebhookDeps = Pick<Services, 'store' | 'newId'>;

/** A Standard Webhooks secret: `whsec_` + base64 of 24 random bytes. */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export async function runWebhookCommand(s: WebhookDeps, workspaceId: string, command: WebhookCommand, metadata: EventMetadata) {
  return handleCommand(
    s.store,
    streams.webhooks(workspaceId),
    endpointsDecider,
    (st) => ({ events: decideEndpoints(command, st), result: undefined }),
    {
      metadata,
      newId: s.newId,
    },
  );
}

export async function endpointsOf(s: Pick<Services, 'store'>, workspaceId: string): Promise<Endpoint[]> {
  const { state } = await loadState(s.store, streams.webhooks(workspaceId), endpointsDecider);
  return [...state.values()];
}

export async function endpointOf(s: Pick<Services, 'store'>, workspaceId: string, endpointId: string): Promise<Endpoint | null> {
  return (await endpointsOf(s, workspaceId)).find((e) => e.endpointId === endpointId) ?? null;
}
