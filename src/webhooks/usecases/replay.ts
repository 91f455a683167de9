import type { Queue } from 'bullmq';
import { DomainError } from '../../platform/errors';
import type { Services } from '../../services';
import { nameUuid } from '../../billing';
import { handleCommand } from '../../platform/eventstore/command-handler';
import { WrongExpectedVersion, type EventMetadata } from '../../platform/eventstore/port';
import type { WebhookReplayRequested } from '../events';
import { decideEndpoints, endpointsDecider } from '../endpoints';
import { claimEndpointReplay, countDailyReplay } from '../replay-limits';
import { createReplay, getReplay, replayIdOf, type Replay } from '../replays';
import type { WebhookJobData } from '../workers/delivery/queue';
import { endpointOf } from './endpoint-command';
import { streams } from '../../platform/streams';

type From = { since: string } | { sincePosition: string };

/**
 * An admin asks for every event of the endpoint's types since a time (or from a log position) to be
 * sent again. The replay id comes from the endpoint and the starting point: asking again answers
 * the same replay and its progress, and queues nothing new. A new replay waits for the endpoint's
 * running one (409) and counts against the workspace's daily cap (429; ../replay-limits.ts). The scan
 * runs in the worker.
 */
export async function startReplay(
  s: Pick<Services, 'store' | 'redis' | 'ks' | 'now' | 'newId'> & { config: Pick<Services['config'], 'WEBHOOKS_MAX_REPLAYS_PER_DAY'> },
  queue: () => Promise<Queue<WebhookJobData>>,
  cmd: { workspaceId: string; endpointId: string; since?: string; sincePosition?: string; by: string; metadata: EventMetadata },
): Promise<{ replay: Replay; created: boolean }> {
  const { workspaceId, endpointId } = cmd;
  const ep = await endpointOf(s, workspaceId, endpointId);
  if (!ep) throw new DomainError('not_found', 'No webhook endpoint with this id');
  const from = await startOf(s, cmd);
  if (ep.status !== 'enabled') throw new DomainError('conflict', 'The endpoint is disabled: enable it first');
  const replayId = replayIdOf(endpointId, from);
  let created = false;
  if (!(await getReplay(s.redis, s.ks, replayId))) {
    await claimEndpointReplay(s.redis, s.ks, endpointId, replayId);
    await countDailyReplay(s.redis, s.ks, workspaceId, s.now(), s.config.WEBHOOKS_MAX_REPLAYS_PER_DAY);
    const start = {
      replayId,
      workspaceId,
      endpointId,
      since: 'since' in from ? from.since : null,
      fromPosition: 'sincePosition' in from ? from.sincePosition : '0',
      toPosition: (await s.store.headPosition()).toString(),
      created: s.now().toISOString(),
    };
    await recordReplay(
      s,
      { workspaceId, endpointId, replayId, since: start.since, fromPosition: start.fromPosition, toPosition: start.toPosition, by: cmd.by },
      cmd.metadata,
    );
    created = await createReplay(s.redis, s.ks, start);
  }
  // Added on every ask: a request that died between recording and queueing is finished by its retry.
  await (await queue()).add('replay', { workspaceId, endpointId, replayId }, { jobId: replayId });
  return { replay: (await getReplay(s.redis, s.ks, replayId))!, created };
}

async function startOf(s: Pick<Services, 'store' | 'now'>, cmd: { since?: string; sincePosition?: string }): Promise<From> {
  if ((cmd.since === undefined) === (cmd.sincePosition === undefined)) {
    throw new DomainError('invalid', 'Give exactly one of since (an ISO 8601 time) and sincePosition (a log position)', 'since');
  }
  if (cmd.since !== undefined) {
    const t = /^\d{4}-\d{2}-\d{2}T/.test(cmd.since) ? Date.parse(cmd.since) : NaN;
    if (Number.isNaN(t)) throw new DomainError('invalid', 'since must be an ISO 8601 time such as 2026-01-31T12:00:00Z', 'since');
    if (t > s.now().getTime()) throw new DomainError('invalid', 'since must not be in the future', 'since');
    return { since: new Date(t).toISOString() };
  }
  const p = cmd.sincePosition!;
  if (!/^\d{1,19}$/.test(p)) throw new DomainError('invalid', 'sincePosition must be a log position (a decimal string)', 'sincePosition');
  const head = await s.store.headPosition();
  if (BigInt(p) > head) throw new DomainError('invalid', `sincePosition is past the newest event (position ${head})`, 'sincePosition');
  try {
    await s.store.readAll({ fromPosition: BigInt(p), maxCount: 1 });
  } catch (err) {
    if (err instanceof RangeError) throw new DomainError('invalid', 'sincePosition is not the position of a stored event', 'sincePosition');
    throw err;
  }
  return { sincePosition: BigInt(p).toString() };
}

/**
 * WebhookReplayRequested, for the audit log, before the replay exists. Its id derives from the replay's:
 * a request retried after a crash finds it already in the stream and writes nothing.
 */
async function recordReplay(s: Pick<Services, 'store'>, data: WebhookReplayRequested['data'], metadata: EventMetadata): Promise<void> {
  const id = nameUuid(`webhook-replay-requested:${data.replayId}`);
  try {
    await handleCommand(
      s.store,
      streams.webhooks(data.workspaceId),
      endpointsDecider,
      (st) => ({ events: decideEndpoints({ type: 'RecordReplay', data }, st), result: undefined }),
      {
        metadata,
        eventIds: () => [id],
      },
    );
  } catch (err) {
    if (!(err instanceof WrongExpectedVersion && (await s.store.readStream(streams.webhooks(data.workspaceId))).some((e) => e.id === id)))
      throw err;
  }
}
