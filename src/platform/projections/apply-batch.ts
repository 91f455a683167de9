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

export function makeTx(
  ks: Keyspace,
  name: string,
  gen: string,
  multi: ChainableCommander,
  live: boolean,
  batch: BatchWrites,
): ProjectionTx {
  const prefix = ks.genPrefix(name, gen);
  return {
    multi,
    live,
    key: (...parts) => prefix + parts.join(':'),
    wsKey: (workspaceId, ...parts) => ks.rmWs(name, gen, workspaceId, ...parts),
    sharedKey: (...parts) => ks.shared(...parts),
    hincrby: (key, field, delta) => batch.hincrby(key, field, delta),
    expireAt: (key, at) => batch.expireAt(key, at),
    evalEach: (lua, keys, args) => batch.evalEach(lua, keys, args),
  };
}

/**
 * One projection's part of a batch, built as its events come (in one call or in several chunks):
 * `add` applies them, queuing the projection's own MULTI commands; `finish` queues its batched
 * writes and its checkpoint. Events at or below the checkpoint are skipped: that is what makes a
 * replay after a crash, or an overlapping resubscription, harmless.
 */
export class ProjectionBatch {
  private readonly writes = new BatchWrites();
  private readonly tx: ProjectionTx;
  /** The position applied up to (the checkpoint this batch leaves). */
  last: bigint;

  constructor(
    private readonly ks: Keyspace,
    private readonly projection: Projection,
    private readonly state: ProjectionState,
    multi: ChainableCommander,
    live: boolean,
  ) {
    this.tx = makeTx(ks, projection.name, state.gen, multi, live, this.writes);
    this.last = state.checkpoint;
  }

  add(events: readonly RecordedEvent[]): void {
    const { projection, tx } = this;
    let last = this.last;
    for (const e of events) {
      if (e.position <= last) continue;
      if (projection.handles.has(e.type)) projection.apply(e, tx);
      last = e.position;
    }
    this.last = last;
  }

  /** Queues the batched writes, then the checkpoint if it moved; returns it. */
  finish(multi: ChainableCommander): bigint {
    this.writes.flush(multi);
    if (this.last > this.state.checkpoint) multi.set(this.ks.checkpoint(this.projection.name, this.state.gen), this.last.toString());
    return this.last;
  }
}

/** Queues `events` for one projection on `multi` and returns the new checkpoint (unchanged if every event was already applied). */
export function applyBatch(
  ks: Keyspace,
  projection: Projection,
  state: ProjectionState,
  events: RecordedEvent[],
  multi: ChainableCommander,
  live: boolean,
): bigint {
  const batch = new ProjectionBatch(ks, projection, state, multi, live);
  batch.add(events);
  return batch.finish(multi);
}

export async function loadProjectionState(redis: Redis, ks: Keyspace, name: string): Promise<ProjectionState> {
  const gen = (await redis.get(ks.active(name))) ?? '0';
  const cp = await redis.get(ks.checkpoint(name, gen));
  return { gen, checkpoint: cp ? BigInt(cp) : 0n };
}
