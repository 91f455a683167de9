import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Keyspace } from '../../../platform/projections/keyspace';
import type { Services } from '../../../services';
import { recordPending } from '../../deliveries';
import { payloadOf } from '../../event-types';
import { getReplay, replayProgress } from '../../replays';
import { endpointOf } from '../../usecases';
import { replayDeliveryJobId, type ReplayJobData, type WebhookJobData } from './queue';

const PAGE = 500;

export type ReplayDeps = Pick<Services, 'store'> & { redis: Redis; ks: Keyspace; queue: Queue<WebhookJobData> };

/**
 * Scans the log from the replay's start to the head it was asked at and enqueues one delivery per
 * event of the workspace that the endpoint subscribes to, whenever it was stored. Resumable: the
 * scanned position is kept after each page, and the replay's set of enqueued ids is checked first,
 * so a job run again (a killed worker) enqueues nothing twice. Each delivery keeps the event id as
 * webhook-id; its job id names the replay, so it is sent even if delivered before.
 */
export async function runReplay(d: ReplayDeps, job: { data: ReplayJobData }): Promise<'enqueued' | 'skipped'> {
  const { replayId, workspaceId, endpointId } = job.data;
  const r = await getReplay(d.redis, d.ks, replayId);
  const ep = await endpointOf(d, workspaceId, endpointId);
  if (!r || !ep) return 'skipped';
  if (r.status === 'enqueued') return 'enqueued';
  const to = BigInt(r.toPosition);
  const since = r.since ? Date.parse(r.since) : null;
  let from = r.scannedTo === '' ? BigInt(r.fromPosition) : BigInt(r.scannedTo);
  let skipFirst = r.scannedTo !== '';
  for (;;) {
    const page = await d.store.readAll({ fromPosition: from, maxCount: PAGE });
    const events = skipFirst ? page.filter((e) => e.position > from) : page;
    skipFirst = true;
    let last = from;
    let done = page.length < PAGE;
    for (const e of events) {
      if (e.position > to) {
        done = true;
        break;
      }
      last = e.position;
      if ((e.data as { workspaceId?: unknown }).workspaceId !== workspaceId) continue;
      if (since !== null && Date.parse(e.created) < since) continue;
      const payload = payloadOf(e);
      if (!payload || !ep.eventTypes.includes(payload.type)) continue;
      if (await replayProgress.isEnqueued(d.redis, d.ks, replayId, e.id)) continue;
      await recordPending(d.redis, d.ks, { deliveryId: e.id, endpointId, workspaceId, eventType: payload.type, payload: JSON.stringify(payload), created: e.created, position: e.position.toString() });
      await d.queue.add('deliver', { workspaceId, endpointId, eventId: e.id, replay: replayId }, { jobId: replayDeliveryJobId(endpointId, e.id, replayId) });
      await replayProgress.enqueued(d.redis, d.ks, replayId, e.id);
    }
    if (last === to) done = true;
    await replayProgress.scanned(d.redis, d.ks, replayId, last, done);
    if (done) return 'enqueued';
    from = last;
  }
}
