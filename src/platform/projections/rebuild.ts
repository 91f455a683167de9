import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { EventStore } from '../eventstore/port';
import { Keyspace } from './keyspace';
import type { Projection } from './projection';
import { dropAbandonedGenerations, dropGeneration } from './generations';
import { GENERATION_CACHE_MS } from './read-models';
import { applyBatch } from './apply-batch';
import { partitionKeyspaces } from './partitions';
import { luaScript } from '../redis-scripts';

export interface RebuildResult {
  name: string;
  gen: string;
  events: number;
  ms: number;
}

/** What a running rebuild says about itself (kept in its lock, so every process can read it). */
export interface RebuildProgress {
  name: string;
  /** The generation it fills; also its fencing token. */
  generation: string;
  owner: string;
  startedAt: string;
  /** Store position replayed so far, and the head it last saw. */
  position: string;
  head: string;
  events: number;
}

/** Another rebuild of the same projection holds the lock. */
export class RebuildRunning extends Error {
  override readonly name = 'RebuildRunning';
  constructor(readonly progress: RebuildProgress) {
    super(
      `a rebuild of ${progress.name} is already running (generation ${progress.generation}, ` +
        `position ${progress.position} of ${progress.head}, started ${progress.startedAt} by ${progress.owner})`,
    );
  }
}

/** The rebuild lost its lock (it stalled past the lock's lifetime and another took over): it stops. */
export class RebuildFenced extends Error {
  override readonly name = 'RebuildFenced';
}

/** The lock outlives a crashed rebuild by at most this long; a live one renews it far more often. */
const LOCK_TTL_MS = 15_000;
const RENEW_EVERY_MS = 3_000;
/**
 * Readers that resolved the old generation before the switch finish within this: twice the time a
 * request-path caller keeps a generation (read-models.ts GENERATION_CACHE_MS), so the generation
 * it names is still there to read.
 */
const DROP_GRACE_MS = 2 * GENERATION_CACHE_MS;
/** How long a finished generation waits for a live runner to take it over before switching itself. */
const HANDOVER_MS = 3000;
/** Attempts to switch without going behind a (late) live runner before switching anyway. */
const SWITCH_TRIES = 20;

// The token is the generation the rebuild fills (its lock's `generation`).
const RENEW = luaScript('platform/projections/rebuild-renew.lua', { keys: ['lock'], args: ['token', 'progress', 'ttlMs'] });
const RELEASE = luaScript('platform/projections/rebuild-release.lua', { keys: ['lock'], args: ['token'] });
/** live: the generation the caller read as active, liveCheckpoint its checkpoint key; force: '1' to switch even behind it. */
const SWITCH = luaScript('platform/projections/rebuild-switch.lua', {
  keys: ['lock', 'active', 'building', 'pending', 'liveCheckpoint'],
  args: ['token', 'live', 'checkpoint', 'force'],
});
const OFFER = luaScript('platform/projections/rebuild-offer.lua', { keys: ['lock', 'pending'], args: ['token'] });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The running rebuild of `name`, or null. */
export async function rebuildStatus(redis: Redis, ks: Keyspace, name: string): Promise<RebuildProgress | null> {
  const v = await redis.get(ks.rebuildLock(name));
  return v ? (JSON.parse(v) as RebuildProgress) : null;
}

/**
 * Replays every event into a fresh generation, then moves the active pointer to it and drops the
 * old one.
 *
 * - One rebuild per projection at a time, across processes: a lock in Redis whose token is the new
 *   generation (fencing: a rebuild that lost its lock can neither renew it nor switch). A second
 *   caller gets RebuildRunning with the first one's progress.
 * - The live runner keeps committing into the active generation meanwhile. The finished generation
 *   is offered to it (`pending`, announced on pub/sub; a runner also notices within its watch
 *   interval): the runner applies what it applied since the rebuild's checkpoint, then moves the
 *   pointer in one script that checks nothing moved, so readers never see an older state and no
 *   event is skipped. With no live runner, the rebuild switches itself once nothing is ahead of it.
 * - A failed rebuild drops its partial generation; a killed one is dropped by the next rebuild or
 *   runner start (dropAbandonedGenerations).
 */
export async function rebuildProjection(opts: {
  store: EventStore;
  redis: Redis;
  ks: Keyspace;
  projection: Projection;
  batchSize?: number;
  onProgress?: (applied: number, head: bigint, position: bigint) => void;
  /** How long the lock outlives a rebuild that stopped renewing it (a killed process). */
  lockTtlMs?: number;
  /** PROJECTION_PARTITIONS: each partition's checkpoint of the new generation is set to the rebuild's. */
  partitions?: number;
}): Promise<RebuildResult> {
  const { store, redis, ks, projection } = opts;
  const name = projection.name;
  const size = opts.batchSize ?? 5000;
  const ttl = opts.lockTtlMs ?? LOCK_TTL_MS;
  const started = Date.now();
  const running = await rebuildStatus(redis, ks, name);
  if (running) throw new RebuildRunning(running);
  const gen = await newGeneration(redis, ks, name);
  const progress: RebuildProgress = {
    name,
    generation: gen,
    owner: `${hostname()}:${process.pid}`,
    startedAt: new Date(started).toISOString(),
    position: '0',
    head: (await store.headPosition()).toString(),
    events: 0,
  };
  const won = await redis.set(ks.rebuildLock(name), JSON.stringify(progress), 'PX', ttl, 'NX');
  if (won === null) {
    const other = await rebuildStatus(redis, ks, name);
    if (other) throw new RebuildRunning(other);
    throw new RebuildFenced(`could not take the rebuild lock of ${name}`);
  }
  let fenced: Error | null = null;
  const renew = async () => {
    const ok = (await RENEW.eval(
      redis,
      { lock: ks.rebuildLock(name) },
      { token: gen, progress: JSON.stringify(progress), ttlMs: String(ttl) },
    )) as number;
    if (ok !== 1) fenced ??= new RebuildFenced(`the rebuild of ${name} (generation ${gen}) lost its lock; stopped`);
  };
  const timer = setInterval(() => void renew().catch(() => undefined), Math.min(RENEW_EVERY_MS, ttl / 3));
  timer.unref();
  const state = { gen, checkpoint: 0n };
  let applied = 0;
  try {
    await redis.sadd(ks.building(name), gen);
    await dropAbandonedGenerations(redis, ks, name);
    await dropGeneration(redis, ks, name, gen);
    /** Replays from the checkpoint until the head (as it moves). */
    const replay = async (): Promise<void> => {
      // Up to the head seen at the start: under constant writes, chasing the moving head never ends.
      const head = await store.headPosition();
      for (;;) {
        if (fenced) throw fenced;
        if (state.checkpoint >= head) return;
        const from = state.checkpoint;
        const events = (await store.readAll({ fromPosition: from, maxCount: size + 1 })).filter((e) => e.position > from);
        if (events.length === 0) return;
        // A pipeline, not a MULTI: nobody reads this generation before the switch, and a failed
        // rebuild drops it whole, so per-batch atomicity would buy nothing here.
        const pipeline = redis.pipeline();
        const cp = applyBatch(ks, projection, state, events, pipeline, false);
        const results = await pipeline.exec();
        const failed = results?.find(([err]) => err);
        if (failed) throw failed[0];
        state.checkpoint = cp;
        applied += events.length;
        progress.position = cp.toString();
        progress.head = head.toString();
        progress.events = applied;
        await renew();
        opts.onProgress?.(applied, head, cp);
      }
    };
    await replay();
    // A rebuild applies every partition's events: each partition's owner resumes from here.
    if ((opts.partitions ?? 1) > 1) {
      for (const pks of partitionKeyspaces(ks.prefix, opts.partitions!))
        await redis.set(pks.checkpoint(name, gen), state.checkpoint.toString());
    }
    const previous = (await redis.get(ks.active(name))) ?? '0';
    // Hand over: a live runner catches the generation up to its own checkpoint and switches in
    // the same MULTI as its next commit (so readers never go back in time, nothing is skipped).
    const offered = (await OFFER.eval(redis, { lock: ks.rebuildLock(name), pending: ks.pending(name) }, { token: gen })) as number;
    if (offered !== 1) throw new RebuildFenced(`the rebuild of ${name} (generation ${gen}) lost its lock before switching`);
    await redis.publish(ks.switchChannel, name);
    const deadline = Date.now() + HANDOVER_MS;
    while ((await redis.get(ks.active(name))) !== gen && Date.now() < deadline) await sleep(10);
    // No live runner took it (none is running): switch here, after catching up with the store.
    for (let attempt = 1, live: string | null; (live = await redis.get(ks.active(name))) !== gen; attempt++) {
      await replay();
      const force = attempt >= SWITCH_TRIES ? '1' : '0';
      const at = live ?? '0';
      const [code] = (await SWITCH.eval(
        redis,
        {
          lock: ks.rebuildLock(name),
          active: ks.active(name),
          building: ks.building(name),
          pending: ks.pending(name),
          liveCheckpoint: ks.checkpoint(name, at),
        },
        { token: gen, live: at, checkpoint: state.checkpoint.toString(), force },
      )) as [number, string];
      if (code === -1) throw new RebuildFenced(`the rebuild of ${name} (generation ${gen}) lost its lock before switching`);
    }
    clearInterval(timer);
    await redis.publish(ks.switchChannel, name);
    if (previous !== gen) {
      await sleep(DROP_GRACE_MS);
      await dropGeneration(redis, ks, name, previous);
    }
  } catch (err) {
    clearInterval(timer);
    // Only ours to drop if it never became active.
    if ((await redis.get(ks.active(name)).catch(() => null)) !== gen) {
      await dropGeneration(redis, ks, name, gen).catch(() => undefined);
      await redis.srem(ks.building(name), gen).catch(() => undefined);
    }
    throw err;
  } finally {
    clearInterval(timer);
    await RELEASE.eval(redis, { lock: ks.rebuildLock(name) }, { token: gen }).catch(() => undefined);
  }
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
