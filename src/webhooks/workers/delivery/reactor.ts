import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { reactor } from '../../../platform/projections/projection';
import type { Keyspace } from '../../../platform/projections/keyspace';
import type { Services } from '../../../services';
import { payloadOf, storedEventTypes } from '../../event-types';
import { recordPending } from '../../deliveries';
import { endpointsOf } from '../../usecases';
import { deliveryJobId, type WebhookJobData } from './queue';

/**
 * Sees each event a webhook type maps to, after it is stored, and enqueues one delivery job per
 * subscribed, enabled endpoint registered before it, with a deterministic job id. Reactors never
 * run during a rebuild or replay, so a replay sends nothing; at-least-once comes from the reactor
 * checkpoint (an event seen again is enqueued again under the same id, which BullMQ ignores).
 */
export function webhookReactor(deps: {
  store: Services['store'];
  redis: Redis;
  ks: Keyspace;
  queue: () => Promise<Queue<WebhookJobData>>;
}) {
  return reactor<{ type: string; data: Record<string, unknown> }>()({
    name: 'webhooks',
    handles: storedEventTypes,
    async react(event) {
      const workspaceId = event.data.workspaceId;
      if (typeof workspaceId !== 'string') return;
      const payload = payloadOf(event);
      if (!payload) return;
      const targets = (await endpointsOf(deps, workspaceId)).filter(
        (ep) => ep.status === 'enabled' && ep.eventTypes.includes(payload.type) && BigInt(ep.since) < event.position,
      );
      if (targets.length === 0) return;
      const queue = await deps.queue();
      const body = JSON.stringify(payload);
      for (const ep of targets) {
        await recordPending(deps.redis, deps.ks, {
          deliveryId: event.id,
          endpointId: ep.endpointId,
          workspaceId,
          eventType: payload.type,
          payload: body,
          created: event.created,
          position: event.position.toString(),
        });
        await queue.add(
          'deliver',
          { workspaceId, endpointId: ep.endpointId, eventId: event.id },
          { jobId: deliveryJobId(ep.endpointId, event.id) },
        );
      }
    },
  });
}
