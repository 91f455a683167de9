import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keyspace } from '../platform/projections/keyspace';

/**
 * Replays: "send this endpoint every event of its types stored since T again". The record, in Redis
 * beside the delivery log (it records what the sender did):
 *   {prefix}webhooks:replay:{replayId}             hash  the Replay fields below
 *   {prefix}webhooks:replay-events:{replayId}      set   event ids enqueued (the enqueue ledger: never twice)
 *   {prefix}webhooks:replay-succeeded:{replayId}   set   event ids delivered by this replay
 *   {prefix}webhooks:replay-failed:{replayId}      set   event ids whose every attempt failed
 *   {prefix}webhooks:replays:{endpointId}          zset  replay ids by creation time
 */
export interface ReplayStart {
  replayId: string;
  workspaceId: string;
  endpointId: string;
  /** ISO time, or null when the replay starts at a position. */
  since: string | null;
  /** Inclusive lower bound (decimal string); "0" with `since` (scanned from the start, filtered by time). */
  fromPosition: string;
  /** The head of the log when the replay was asked for: later events are delivered live anyway. */
  toPosition: string;
  created: string;
}

export interface Replay extends ReplayStart {
  status: 'scanning' | 'enqueued';
  /** The last position scanned (decimal string), "" before the first page. */
  scannedTo: string;
  matched: number;
  succeeded: number;
  failed: number;
}

/** Deterministic: the same endpoint and starting point name the same replay, so a retried request queues nothing new. */
export function replayIdOf(endpointId: string, from: { since: string } | { sincePosition: string }): string {
  const spec = 'since' in from ? `time:${from.since}` : `position:${from.sincePosition}`;
  return `whr_${createHash('sha256').update(`${endpointId}|${spec}`).digest('hex').slice(0, 32)}`;
}

const keys = (ks: Keyspace, replayId: string) => ({
  record: ks.shared('webhooks', 'replay', replayId),
  events: ks.shared('webhooks', 'replay-events', replayId),
  succeeded: ks.shared('webhooks', 'replay-succeeded', replayId),
  failed: ks.shared('webhooks', 'replay-failed', replayId),
});
const listKey = (ks: Keyspace, endpointId: string) => ks.shared('webhooks', 'replays', endpointId);

/** Records the replay unless it exists; true when this call created it. */
export async function createReplay(redis: Redis, ks: Keyspace, r: ReplayStart): Promise<boolean> {
  const k = keys(ks, r.replayId);
  if (!(await redis.hsetnx(k.record, 'replayId', r.replayId))) return false;
  await redis
    .multi()
    .hset(k.record, { ...r, since: r.since ?? '', status: 'scanning', scannedTo: '' })
    .zadd(listKey(ks, r.endpointId), Date.parse(r.created), r.replayId)
    .exec();
  return true;
}

export async function getReplay(redis: Redis, ks: Keyspace, replayId: string): Promise<Replay | null> {
  const k = keys(ks, replayId);
  const [[, h], [, matched], [, succeeded], [, failed]] = (await redis
    .multi()
    .hgetall(k.record)
    .scard(k.events)
    .scard(k.succeeded)
    .scard(k.failed)
    .exec()) as [[unknown, Record<string, string>], [unknown, number], [unknown, number], [unknown, number]];
  if (!h.created) return null;
  return {
    replayId: h.replayId,
    workspaceId: h.workspaceId,
    endpointId: h.endpointId,
    since: h.since || null,
    fromPosition: h.fromPosition,
    toPosition: h.toPosition,
    created: h.created,
    status: h.status as Replay['status'],
    scannedTo: h.scannedTo,
    matched,
    succeeded,
    failed,
  };
}

/** Newest first. */
export async function listReplays(redis: Redis, ks: Keyspace, endpointId: string, limit = 20): Promise<Replay[]> {
  const ids = await redis.zrevrange(listKey(ks, endpointId), 0, limit - 1);
  return (await Promise.all(ids.map((id) => getReplay(redis, ks, id)))).filter((r): r is Replay => r !== null);
}

export const replayProgress = {
  isEnqueued: (redis: Redis, ks: Keyspace, replayId: string, eventId: string) =>
    redis.sismember(keys(ks, replayId).events, eventId).then((n) => n === 1),
  enqueued: (redis: Redis, ks: Keyspace, replayId: string, eventId: string) => redis.sadd(keys(ks, replayId).events, eventId),
  scanned: (redis: Redis, ks: Keyspace, replayId: string, position: bigint, done: boolean) =>
    redis.hset(
      keys(ks, replayId).record,
      done ? { scannedTo: position.toString(), status: 'enqueued' } : { scannedTo: position.toString() },
    ),
  /** The outcome of one replayed delivery; a later success wins over an earlier failure. */
  outcome: async (redis: Redis, ks: Keyspace, replayId: string, eventId: string, ok: boolean) => {
    const k = keys(ks, replayId);
    if (ok) await redis.multi().sadd(k.succeeded, eventId).srem(k.failed, eventId).exec();
    else await redis.sadd(k.failed, eventId);
  },
};
