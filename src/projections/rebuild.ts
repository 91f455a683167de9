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
 *
 * Each batch is one pipelined round trip (changes + the new generation's checkpoint). A failed
 * rebuild drops its partial generation and leaves the active one untouched.
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
  const gen = await newGeneration(redis, ks, name);
  await dropGeneration(redis, ks, name, gen);
  const state = { gen, checkpoint: 0n };
  let applied = 0;
  try {
    for (;;) {
      const head = await store.headPosition();
      if (state.checkpoint >= head) break;
      const from = state.checkpoint;
      const events = (await store.readAll({ fromPosition: from, maxCount: size + 1 })).filter((e) => e.position > from);
      if (events.length === 0) break;
      // A pipeline, not a MULTI: nobody reads this generation before the switch, and a failed
      // rebuild drops it whole, so per-batch atomicity would buy nothing here. (Overlapping the
      // next read with this round trip was measured too: no faster, the time goes to decoding
      // events and building commands in this process, not to Redis.)
      const pipeline = redis.pipeline();
      const cp = applyBatch(ks, projection, state, events, pipeline, false);
      const results = await pipeline.exec();
      const failed = results?.find(([err]) => err);
      if (failed) throw failed[0];
      state.checkpoint = cp;
      applied += events.length;
      opts.onProgress?.(applied, head, cp);
    }
  } catch (err) {
    await dropGeneration(redis, ks, name, gen).catch(() => undefined);
    throw err;
  }
  const previous = await switchActive(redis, ks, name, gen);
  if (previous !== gen) await dropGeneration(redis, ks, name, previous);
  return { name, gen, events: applied, ms: Date.now() - started };
}

/** A generation number no other build has used: above the counter and the active generation. */
async function newGeneration(redis: Redis, ks: Keyspace, name: string): Promise<string> {
  const active = Number((await redis.get(ks.active(name))) ?? '0');
  let gen = await redis.incr(ks.genCounter(name));
  if (gen <= active) {
    // The counter was lost (keys deleted by hand) while a generation stayed active.
    await redis.set(ks.genCounter(name), String(active));
    gen = await redis.incr(ks.genCounter(name));
  }
  return String(gen);
}

/**
 * Moves the active pointer to `gen` and returns the generation it replaced (whatever is active at
 * that moment, so two rebuilds at once leave no orphaned generation behind).
 */
async function switchActive(redis: Redis, ks: Keyspace, name: string, gen: string): Promise<string> {
  // One atomic SET … GET: no WATCH, which would be unsafe on a connection shared with other callers.
  const previous = (await redis.call('SET', ks.active(name), gen, 'GET')) as string | null;
  return previous ?? '0';
}
