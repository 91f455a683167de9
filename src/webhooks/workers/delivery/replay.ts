import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Keyspace } from '../../../platform/projections/keyspace';
import type { Services } from '../../../services';
import { recordPending } from '../../deliveries';
import { payloadOf } from '../../event-types';
import { getReplay, replayProgress } from '../../replays';
import { endpointOf } from '../../usecases';
import { replayDeliveryJobId, type ReplayJobData, type WebhookJobData } from './queue';
import { workspaceEventsFor } from './workspace-events';

export type ReplayDeps = Pick<Services, 'store'> & { redis: Redis; ks: Keyspace; queue: Queue<WebhookJobData>; now?: () => Date };

/**
 * Reads the workspace's own streams for events of the endpoint's types between the replay's start and
 * the head it was asked at (./workspace-events.ts), and enqueues one delivery per event, in log order,
 * whenever it was stored. Resumable: the replay's set of enqueued ids is checked first, so a job run
 * again (a killed worker) enqueues nothing twice. Each delivery keeps the event id as webhook-id; its
 * job id names the replay, so it is sent even if delivered before.
 */
export async function runReplay(d: ReplayDeps, job: { data: ReplayJobData }): Promise<'enqueued' | 'skipped'> {
  const { replayId, workspaceId, endpointId } = job.data;
  const r = await getReplay(d.redis, d.ks, replayId);
  const ep = await endpointOf(d, workspaceId, endpointId);
  if (!r || !ep) return 'skipped';
  if (r.status === 'enqueued') return 'enqueued';
  const to = BigInt(r.toPosition);
  const events = await workspaceEventsFor(d.store, {
    workspaceId,
    eventTypes: ep.eventTypes,
    from: BigInt(r.fromPosition),
    to,
    since: r.since ? new Date(r.since) : null,
    until: (d.now ?? (() => new Date()))(),
  });
  for (const e of events) {
    const payload = payloadOf(e);
    if (!payload || !ep.eventTypes.includes(payload.type)) continue;
    if (await replayProgress.isEnqueued(d.redis, d.ks, replayId, e.id)) continue;
    await recordPending(d.redis, d.ks, {
      deliveryId: e.id,
      endpointId,
      workspaceId,
      eventType: payload.type,
      payload: JSON.stringify(payload),
      created: e.created,
      position: e.position.toString(),
    });
    await d.queue.add(
      'deliver',
      { workspaceId, endpointId, eventId: e.id, replay: replayId },
      { jobId: replayDeliveryJobId(endpointId, e.id, replayId) },
    );
    await replayProgress.enqueued(d.redis, d.ks, replayId, e.id);
  }
  await replayProgress.scanned(d.redis, d.ks, replayId, to, true);
  return 'enqueued';
}
