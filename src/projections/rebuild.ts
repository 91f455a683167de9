import type { Redis } from 'ioredis';
import type { EventStore } from '../eventstore/port';
import { Keyspace } from './keyspace';
import type { Projection } from './projection';
import { applyBatch, loadProjectionState } from './runner';

export interface RebuildResult {
  name: string;
  gen: string;
  events: number;
  ms: number;
}

/** Deletes every key of one generation of a projection. */
export async function dropGeneration(redis: Redis, ks: Keyspace, name: string, gen: string): Promise<number> {
  let cursor = '0';
  let dropped = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${ks.genPrefix(name, gen)}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) dropped += await redis.unlink(...keys);
  } while (cursor !== '0');
  return dropped;
}

/**
 * Replays every event into a fresh generation, then moves the active pointer to it and drops the
 * old one. A live runner notices the switch at its next batch and resubscribes from the new
 * generation's checkpoint, so events appended during the switch are neither lost nor doubled.
 */
export async function rebuildProjection(opts: {
  store: EventStore;
  redis: Redis;
  ks: Keyspace;
  projection: Projection;
  batchSize?: number;
  onProgress?: (applied: number, head: bigint, position: bigint) => void;
}): Promise<RebuildResult> {
  const { store, redis, ks, projection } = opts;
  const name = projection.name;
  const size = opts.batchSize ?? 5000;
  const started = Date.now();
  const old = await loadProjectionState(redis, ks, name);
  let gen = String(await redis.incr(ks.genCounter(name)));
  if (gen === old.gen) gen = String(await redis.incr(ks.genCounter(name)));
  await dropGeneration(redis, ks, name, gen);
  const state = { gen, checkpoint: 0n };
  let applied = 0;
  for (;;) {
    const head = await store.headPosition();
    if (state.checkpoint >= head) break;
    const from = state.checkpoint;
    const events = (await store.readAll({ fromPosition: from, maxCount: size + 1 })).filter((e) => e.position > from);
    if (events.length === 0) break;
    const multi = redis.multi();
    const cp = applyBatch(ks, projection, state, events, multi, false);
    const results = await multi.exec();
    const failed = results?.find(([err]) => err);
    if (failed) throw failed[0];
    state.checkpoint = cp;
    applied += events.length;
    opts.onProgress?.(applied, head, cp);
  }
  await redis.set(ks.active(name), gen);
  await dropGeneration(redis, ks, name, old.gen);
  return { name, gen, events: applied, ms: Date.now() - started };
}
