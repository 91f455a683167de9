import type { Redis } from 'ioredis';
import type { EventStore } from '../eventstore/port';
import type { Logger } from '../log';
import { applyBatch, ProjectionState } from './apply-batch';
import { dropAbandonedGenerations } from './generations';
import { Keyspace } from './keyspace';
import type { Projection } from './projection';

/**
 * How the live runner (runner.ts) keeps in step with the generations in Redis: it notices when
 * Redis no longer holds what it holds (a rebuild switched a generation, another runner moved a
 * checkpoint, Redis lost its data), takes over generations that rebuilds finished, and sets the
 * ready markers once caught up. Each function reads the runner's per-projection state and never
 * changes it, except adoptRebuilt, which records the generations it took over.
 */

/** The runner's projections, each by name with its state. */
export type RunnerState = Map<string, ProjectionState>;

/**
 * Thrown inside the loop when Redis no longer matches what the runner holds (a rebuild switched a
 * generation, or another runner moved a checkpoint): reload and resubscribe from the checkpoints.
 */
export class GenerationSwitched extends Error {}

/** The partition's fencing token is no longer the runner's: another projector owns it now. */
export class FencedOut extends Error {}

/** A partition owner's fencing token (partition-lease.ts): the batch commits only while `fence` holds it. */
export interface Fence {
  key: string;
  token(): string | null;
}

// ARGV: per projection (pointer key, generation, checkpoint key, checkpoint, ready key). Sets the
// ready markers only if every pointer and checkpoint is still what the runner holds.
const MARK_READY = `
for i = 1, #ARGV, 5 do
  if (redis.call('GET', ARGV[i]) or '0') ~= ARGV[i + 1] then return 0 end
  if (redis.call('GET', ARGV[i + 2]) or '0') ~= ARGV[i + 3] then return 0 end
end
for i = 1, #ARGV, 5 do redis.call('SET', ARGV[i + 4], ARGV[i + 3]) end
return 1`;

// ARGV: fence key ('' for none), fence token, new checkpoint, progress channel, progress, projection
// count n, then n × (pointer key, generation, checkpoint key, checkpoint), then the checkpoint keys to
// move. Moves them only while the fence holds the token (else -1) and every pointer and checkpoint is
// still what the runner holds (else 0), then publishes the progress.
const ADVANCE = `
if ARGV[1] ~= '' and redis.call('GET', ARGV[1]) ~= ARGV[2] then return -1 end
local n = tonumber(ARGV[6])
for i = 7, 6 + 4 * n, 4 do
  if (redis.call('GET', ARGV[i]) or '0') ~= ARGV[i + 1] then return 0 end
  if (redis.call('GET', ARGV[i + 2]) or '0') ~= ARGV[i + 3] then return 0 end
end
for i = 7 + 4 * n, #ARGV do redis.call('SET', ARGV[i], ARGV[3]) end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1`;

// KEYS: active pointer, the old generation's checkpoint, pending, building set. ARGV: old generation,
// its checkpoint, the new generation. Switches to a rebuild's generation the runner has caught up,
// only if nothing moved meanwhile; -1 for an offer whose rebuild is gone (its generation was dropped).
const ADOPT = `
if redis.call('SISMEMBER', KEYS[4], ARGV[3]) == 0 then
  if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
  return -1
end
if (redis.call('GET', KEYS[1]) or '0') ~= ARGV[1] then return 0 end
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[2] then return 0 end
if redis.call('GET', KEYS[3]) ~= ARGV[3] then return 0 end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('DEL', KEYS[3])
redis.call('SREM', KEYS[4], ARGV[3])
return 1`;

/**
 * WATCHes the active pointers (a rebuild switched a generation) and the runner's checkpoints
 * (another runner committed: never run two, but if it happens, neither applies an event twice),
 * and throws GenerationSwitched (unwatched) if they already differ from what the runner holds.
 */
export async function watchUnchanged(redis: Redis, ks: Keyspace, projections: Projection[], state: RunnerState, fence?: Fence): Promise<void> {
  const pointers = projections.map((p) => ks.active(p.name));
  const checkpoints = projections.map((p) => ks.checkpoint(p.name, state.get(p.name)!.gen));
  const fenced = fence ? [fence.key] : [];
  // Sent back to back on the one connection (WATCH is queued before the MGET): one round trip, not two.
  const [, seen] = await Promise.all([redis.watch(...pointers, ...checkpoints, ...fenced), redis.mget(...pointers, ...checkpoints, ...fenced)]);
  if (fence && (fence.token() === null || seen[2 * projections.length] !== fence.token())) {
    await redis.unwatch();
    throw new FencedOut(`partition fenced: token ${fence.token()} is not the current ${seen[2 * projections.length]}`);
  }
  const stale = projections.some((p, i) => {
    const st = state.get(p.name)!;
    const cp = seen[projections.length + i];
    return (seen[i] ?? '0') !== st.gen || (cp ? BigInt(cp) : 0n) !== st.checkpoint;
  });
  if (stale) {
    await redis.unwatch();
    throw new GenerationSwitched();
  }
}

/**
 * Whether the runner must reload: a rebuild offers a generation, or (only while the runner waits
 * on its subscription from before to after the read: `isIdle`) a pointer, a checkpoint or a ready
 * marker differs. Otherwise, while idle, drops the generations abandoned rebuilds left.
 */
export async function movedUnderneath(
  redis: Redis,
  ks: Keyspace,
  projections: Projection[],
  state: RunnerState,
  isIdle: () => boolean,
): Promise<boolean> {
  if (projections.length === 0) return false;
  const idle = isIdle();
  const pointers = projections.map((p) => ks.active(p.name));
  const checkpoints = projections.map((p) => ks.checkpoint(p.name, state.get(p.name)!.gen));
  const ready = projections.map((p) => ks.ready(p.name));
  const offers = projections.map((p) => ks.pending(p.name));
  const seen = await redis.mget(...pointers, ...checkpoints, ...ready, ...offers);
  const n = projections.length;
  const offered = projections.some((p, i) => seen[3 * n + i] !== null && seen[3 * n + i] !== state.get(p.name)!.gen);
  // While committing, pointers and checkpoints move under the runner's own hand: only an offer counts.
  const differs =
    idle &&
    isIdle() &&
    projections.some((p, i) => {
      const st = state.get(p.name)!;
      const cp = seen[n + i];
      return (seen[i] ?? '0') !== st.gen || (cp ? BigInt(cp) : 0n) !== st.checkpoint || seen[2 * n + i] === null;
    });
  if (offered || differs) return true;
  if (idle) for (const p of projections) if (await redis.scard(ks.building(p.name))) await dropAbandonedGenerations(redis, ks, p.name);
  return false;
}

/**
 * Takes over generations that rebuilds finished: applies to each what this runner applied since
 * the rebuild's checkpoint, then switches the pointer in one script (see ADOPT). Records each
 * generation taken over in `state`; throws GenerationSwitched if something moved meanwhile.
 */
export async function adoptRebuilt(
  d: { redis: Redis; ks: Keyspace; projections: Projection[]; store: EventStore; batchSize: number; log: Logger },
  state: RunnerState,
): Promise<void> {
  const { redis, ks, projections, store } = d;
  if (projections.length === 0) return;
  const offers = await redis.mget(...projections.map((p) => ks.pending(p.name)));
  const size = Math.max(d.batchSize, 2000);
  for (const [i, p] of projections.entries()) {
    const gen = offers[i];
    const st = state.get(p.name)!;
    if (gen === null || gen === st.gen) continue;
    const cp = await redis.get(ks.checkpoint(p.name, gen));
    const next: ProjectionState = { gen, checkpoint: cp ? BigInt(cp) : 0n };
    while (next.checkpoint < st.checkpoint) {
      const from = next.checkpoint;
      const events = (await store.readAll({ fromPosition: from, maxCount: size + 1 })).filter(
        (e) => e.position > from && e.position <= st.checkpoint,
      );
      if (events.length === 0) break;
      const pipeline = redis.pipeline();
      next.checkpoint = applyBatch(ks, p, next, events, pipeline, false);
      const failed = (await pipeline.exec())?.find(([err]) => err);
      if (failed) throw failed[0];
    }
    const adopted = (await redis.eval(
      ADOPT,
      4,
      ks.active(p.name),
      ks.checkpoint(p.name, st.gen),
      ks.pending(p.name),
      ks.building(p.name),
      st.gen,
      st.checkpoint.toString(),
      gen,
    )) as number;
    if (adopted === 0) throw new GenerationSwitched();
    if (adopted === 1) {
      state.set(p.name, next);
      d.log.info({ projection: p.name, generation: gen }, 'switched to a rebuilt generation');
    }
  }
}

/** Sets every projection's ready marker, if Redis still holds exactly what the runner holds (else GenerationSwitched). */
export async function markReady(redis: Redis, ks: Keyspace, projections: Projection[], state: RunnerState): Promise<void> {
  if (projections.length === 0) return;
  const args = projections.flatMap((p) => {
    const st = state.get(p.name)!;
    return [ks.active(p.name), st.gen, ks.checkpoint(p.name, st.gen), st.checkpoint.toString(), ks.ready(p.name)];
  });
  if ((await redis.eval(MARK_READY, 0, ...args)) !== 1) throw new GenerationSwitched();
}

/**
 * Moves checkpoints over a batch that holds none of a partition's events, in one script instead of
 * WATCH, MGET, MULTI, EXEC and PUBLISH: with the same checks as watchUnchanged (the fence first:
 * FencedOut; then every pointer and checkpoint: GenerationSwitched), nothing applied.
 * `keys` are the projection and reactor checkpoint keys to set to `last`.
 */
export async function advanceCheckpoints(
  redis: Redis,
  ks: Keyspace,
  projections: Projection[],
  state: RunnerState,
  fence: Fence | undefined,
  last: bigint,
  keys: string[],
  progress: bigint,
): Promise<void> {
  const held = projections.flatMap((p) => {
    const st = state.get(p.name)!;
    return [ks.active(p.name), st.gen, ks.checkpoint(p.name, st.gen), st.checkpoint.toString()];
  });
  const token = fence ? fence.token() : '';
  if (token === null) throw new FencedOut('partition fenced: this runner holds no token');
  const args = [fence?.key ?? '', token, last.toString(), ks.progressChannel, progress.toString(), String(projections.length), ...held, ...keys];
  const r = (await redis.eval(ADVANCE, 0, ...args)) as number;
  if (r === -1) throw new FencedOut(`partition fenced: token ${token} is no longer the current one`);
  if (r !== 1) throw new GenerationSwitched();
}
