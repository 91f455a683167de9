import type { ChainableCommander, Redis } from 'ioredis';
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

// ARGV: fence key ('' for none), fence token, guard key, then per projection (pointer key,
// generation, checkpoint key, checkpoint). Run right after a WATCH of every key it reads and the
// guard, and right before the batch's MULTI: on any difference it writes the guard (SET then DEL,
// so nothing is left), which makes the EXEC of this connection's MULTI fail; -1 for the fence, 0
// for a pointer or checkpoint, 1 when all hold. pcall: a read that fails (a key of another type)
// counts as a difference instead of failing the script, which would leave the EXEC unguarded.
const GUARD = `
local r = 1
if ARGV[1] ~= '' and redis.pcall('GET', ARGV[1]) ~= ARGV[2] then r = -1 end
if r == 1 then
  for i = 4, #ARGV, 4 do
    if (redis.pcall('GET', ARGV[i]) or '0') ~= ARGV[i + 1] or (redis.pcall('GET', ARGV[i + 2]) or '0') ~= ARGV[i + 3] then r = 0 break end
  end
end
if r ~= 1 then
  redis.call('SET', ARGV[3], '1')
  redis.call('DEL', ARGV[3])
end
return r`;

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

/** What a batch was built from, per projection: the generation and the checkpoint it expects in Redis. */
export type Expected = Array<{ name: string; gen: string; checkpoint: bigint }>;

/**
 * Starts a batch's pipeline with its guard, so that the check and the commit cost one round trip
 * (a WATCH + MGET before the MULTI, as before, was a round trip of its own): WATCH the active
 * pointers (a rebuild switched a generation), the checkpoints (another runner committed: never run
 * two, but if it happens, neither applies an event twice), the fence and the guard key; then the
 * GUARD script compares them with what the batch was built from; then MULTI. The caller queues the
 * batch, then EXEC, and reads the replies with `guardedOutcome`. A difference the script finds
 * aborts the EXEC (it writes the watched guard key), a change after it aborts it through WATCH, so
 * a stale owner's batch or one built on moved checkpoints never commits.
 * Returns the token the batch was guarded with (null: this runner holds none, nothing queued).
 */
export function guardBatch(pipeline: ChainableCommander, ks: Keyspace, expected: Expected, fence?: Fence): string | null {
  const token = fence ? fence.token() : '';
  if (token === null) return null;
  const held: string[] = [];
  for (const e of expected) held.push(ks.active(e.name), e.gen, ks.checkpoint(e.name, e.gen), e.checkpoint.toString());
  const watched = expected.flatMap((e) => [ks.active(e.name), ks.checkpoint(e.name, e.gen)]);
  pipeline.watch(...watched, ...(fence ? [fence.key] : []), ks.commitGuard);
  pipeline.eval(GUARD, 0, fence?.key ?? '', token, ks.commitGuard, ...held);
  // A pipeline's multi() opens a transaction inside it (ioredis's types leave it out of ChainableCommander).
  (pipeline as ChainableCommander & { multi(): ChainableCommander }).multi();
  return token;
}

/**
 * The replies of a guarded batch's pipeline (WATCH, GUARD, MULTI, the batch's QUEUED…, EXEC):
 * the EXEC's replies if it committed; else FencedOut (the fence held another token),
 * GenerationSwitched (a pointer or checkpoint differed, or changed before the EXEC), or the
 * error that discarded the transaction.
 */
export function guardedOutcome(results: Array<[Error | null, unknown]> | null, token: string): unknown[] {
  if (!results || results.length < 4) throw new Error('a guarded batch got no replies');
  const [checkErr, check] = results[1];
  const [execErr, exec] = results[results.length - 1];
  if (checkErr) {
    // Cannot happen with a script that only reads and writes strings; if it does, the EXEC ran
    // unchecked: reload from Redis rather than trust what this runner holds.
    if (Array.isArray(exec)) throw new GenerationSwitched(`the batch guard failed (${checkErr.message}) and the batch committed unchecked`);
    throw checkErr;
  }
  if (check === -1) throw new FencedOut(`partition fenced: token ${token} is no longer the current one`);
  if (check !== 1) throw new GenerationSwitched();
  if (execErr) throw execErr;
  if (exec === null) throw new GenerationSwitched();
  return exec as unknown[];
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
 * a guarded MULTI: with the same checks as guardBatch (the fence first:
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
