import type { ChainableCommander, Redis } from 'ioredis';
import type { EventStore } from '../eventstore/port';
import type { Logger } from '../log';
import { applyBatch, ProjectionState } from './apply-batch';
import { dropAbandonedGenerations } from './generations';
import { Keyspace } from './keyspace';
import type { Projection } from './projection';
import { luaScript } from '../redis-scripts';

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

// Keys in ARGV (numkeys 0), as before the scripts moved to files: the commands sent are the same.
const MARK_READY = luaScript('platform/projections/mark-ready.lua', { keys: [], args: [], rest: true });
/** fence: the fence key ('' for none); projections: how many (pointer, generation, checkpoint key, checkpoint) follow. */
const ADVANCE = luaScript('platform/projections/advance.lua', {
  keys: [],
  args: ['fence', 'token', 'checkpoint', 'progressChannel', 'progress', 'projections'],
  rest: true,
});
/**
 * EVAL with the full text on purpose, every batch: inside the pipeline an EVALSHA's NOSCRIPT (a
 * flushed script cache) would fail only this command, and the EXEC would then run unguarded.
 */
const GUARD = luaScript('platform/projections/guard.lua', { keys: [], args: ['fence', 'token', 'guard'], rest: true });
const ADOPT = luaScript('platform/projections/adopt.lua', {
  keys: ['active', 'oldCheckpointKey', 'pending', 'building'],
  args: ['oldGen', 'oldCheckpoint', 'gen'],
});

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
  void GUARD.eval(pipeline, {}, { fence: fence?.key ?? '', token, guard: ks.commitGuard }, held);
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
    const adopted = (await ADOPT.eval(
      redis,
      {
        active: ks.active(p.name),
        oldCheckpointKey: ks.checkpoint(p.name, st.gen),
        pending: ks.pending(p.name),
        building: ks.building(p.name),
      },
      { oldGen: st.gen, oldCheckpoint: st.checkpoint.toString(), gen },
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
  if ((await MARK_READY.eval(redis, {}, {}, args)) !== 1) throw new GenerationSwitched();
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
  const named = {
    fence: fence?.key ?? '',
    token,
    checkpoint: last.toString(),
    progressChannel: ks.progressChannel,
    progress: progress.toString(),
    projections: projections.length,
  };
  const r = (await ADVANCE.eval(redis, {}, named, [...held, ...keys])) as number;
  if (r === -1) throw new FencedOut(`partition fenced: token ${token} is no longer the current one`);
  if (r !== 1) throw new GenerationSwitched();
}
