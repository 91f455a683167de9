import type { Redis } from 'ioredis';
import { conflict, DomainError } from '../platform/errors';
import type { Keyspace } from '../platform/projections/keyspace';
import { getReplay, type Replay } from './replays';

/**
 * How much replaying one workspace may ask for (docs/WEBHOOKS.md, "Replays"): one running replay per
 * endpoint, and WEBHOOKS_MAX_REPLAYS_PER_DAY new replays per workspace and UTC day. A replay re-sends
 * every matching event to a URL the workspace chose, so without limits the service would be a
 * request amplifier. Keys, shared (outside projection generations):
 *   {prefix}webhooks:replay-current:{endpointId}        string  the endpoint's latest replay id
 *   {prefix}webhooks:replays-per-day:{wsId}:{YYYY-MM-DD} counter of replays started that day (expires)
 */

/** Running until its scan ended and every delivery it queued succeeded or failed every attempt. */
export const isRunning = (r: Replay) => r.status === 'scanning' || r.succeeded + r.failed < r.matched;

/**
 * Makes `replayId` the endpoint's current replay unless another one still runs (409 naming it). The
 * check and the write are one WATCH/MULTI on a connection of its own, so two requests cannot both start.
 */
export async function claimEndpointReplay(redis: Redis, ks: Keyspace, endpointId: string, replayId: string): Promise<void> {
  const key = ks.shared('webhooks', 'replay-current', endpointId);
  const c = redis.duplicate();
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      await c.watch(key);
      const holder = await c.get(key);
      if (holder && holder !== replayId) {
        const running = await getReplay(redis, ks, holder);
        if (running && isRunning(running)) {
          await c.unwatch();
          throw conflict(
            `Replay ${holder} of this endpoint is still running (${running.succeeded + running.failed} of ${running.matched} deliveries done): one replay per endpoint at a time`,
          );
        }
      }
      if (await c.multi().set(key, replayId).exec()) return;
    }
    throw conflict('Another replay of this endpoint is starting at the same moment: try again');
  } finally {
    c.disconnect();
  }
}

/** Counts a new replay against the workspace's day (UTC); 429 with Retry-After past the cap, and nothing counted. */
export async function countDailyReplay(redis: Redis, ks: Keyspace, workspaceId: string, now: Date, perDay: number): Promise<void> {
  const day = now.toISOString().slice(0, 10);
  const key = ks.shared('webhooks', 'replays-per-day', workspaceId, day);
  const [[, n]] = (await redis
    .multi()
    .incr(key)
    .expire(key, 2 * 86_400)
    .exec()) as [[unknown, number], unknown];
  if (n <= perDay) return;
  await redis.decr(key);
  const midnight = Date.parse(`${day}T00:00:00Z`) + 86_400_000;
  throw new DomainError(
    'rate_limited',
    `This workspace started its ${perDay} replays for today (UTC): the next one can start after ${new Date(midnight).toISOString()}`,
    undefined,
    Math.max(1, Math.ceil((midnight - now.getTime()) / 1000)),
  );
}
