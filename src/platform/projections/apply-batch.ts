import type { ChainableCommander, Redis } from 'ioredis';
import type { RecordedEvent } from '../eventstore/port';
import { BatchWrites } from './batch-writes';
import { Keyspace } from './keyspace';
import type { Projection, ProjectionTx } from './projection';

/**
 * How a batch of events is applied to one projection, shared by the live runner (runner.ts) and
 * rebuilds (rebuild.ts): write commands queued on one MULTI or pipeline, with the checkpoint.
 */

/** Where one projection stands in Redis: its active generation and the position it has applied. */
export interface ProjectionState {
  gen: string;
  checkpoint: bigint;
}

export function makeTx(ks: Keyspace, name: string, gen: string, multi: ChainableCommander, live: boolean, batch: BatchWrites): ProjectionTx {
  const prefix = ks.genPrefix(name, gen);
  return {
    multi,
    live,
    key: (...parts) => prefix + parts.join(':'),
    sharedKey: (...parts) => ks.shared(...parts),
    hincrby: (key, field, delta) => batch.hincrby(key, field, delta),
    expireAt: (key, at) => batch.expireAt(key, at),
    evalEach: (lua, keys, args) => batch.evalEach(lua, keys, args),
  };
}

/**
 * Queues `events` for one projection on `multi` and returns the new checkpoint (unchanged if every
 * event was already applied). Events at or below the checkpoint are skipped: that is what makes a
 * replay after a crash, or an overlapping resubscription, harmless.
 */
export function applyBatch(
  ks: Keyspace,
  projection: Projection,
  state: ProjectionState,
  events: RecordedEvent[],
  multi: ChainableCommander,
  live: boolean,
): bigint {
  const batch = new BatchWrites();
  const tx = makeTx(ks, projection.name, state.gen, multi, live, batch);
  let last = state.checkpoint;
  for (const e of events) {
    if (e.position <= last) continue;
    if (projection.handles.has(e.type)) projection.apply(e, tx);
    last = e.position;
  }
  batch.flush(multi);
  if (last > state.checkpoint) multi.set(ks.checkpoint(projection.name, state.gen), last.toString());
  return last;
}

export async function loadProjectionState(redis: Redis, ks: Keyspace, name: string): Promise<ProjectionState> {
  const gen = (await redis.get(ks.active(name))) ?? '0';
  const cp = await redis.get(ks.checkpoint(name, gen));
  return { gen, checkpoint: cp ? BigInt(cp) : 0n };
}
