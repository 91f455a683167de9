import type { Redis } from 'ioredis';
import type { RecordedEvent } from '../eventstore/port';
import type { Keyspace } from './keyspace';
import type { Reactor } from './projection';

/**
 * Runs each reactor over the events past its checkpoint, in order, then records the checkpoints
 * (after the projections committed: at least once, so reactors are idempotent). Updates `checkpoints`.
 * The checkpoints that moved are written in one MSET after every reactor ran (one round trip per
 * batch, not one per reactor: with a partition's runner over a stream mostly of other partitions'
 * events, most batches react to nothing and only move checkpoints). A crash before it re-runs the
 * batch's reactions, which at least once allows.
 * `events` may leave out events no reactor handles: every checkpoint still moves to `through` (the
 * batch's last position), as it would over all of them.
 */
export async function runReactors(
  reactors: readonly Reactor[],
  checkpoints: Map<string, bigint>,
  events: readonly RecordedEvent[],
  redis: Redis,
  ks: Keyspace,
  through: bigint = events.length > 0 ? events[events.length - 1].position : 0n,
): Promise<void> {
  const moved: string[] = [];
  for (const r of reactors) {
    const cp = checkpoints.get(r.name) ?? 0n;
    let last = cp;
    for (const e of events) {
      if (e.position <= last) continue;
      if (r.handles.has(e.type)) await r.react(e);
      last = e.position;
    }
    if (through > last) last = through;
    if (last > cp) moved.push(r.name, last.toString());
  }
  if (moved.length === 0) return;
  const pairs: string[] = [];
  for (let i = 0; i < moved.length; i += 2) pairs.push(ks.reactorCheckpoint(moved[i]), moved[i + 1]);
  await redis.mset(...pairs);
  for (let i = 0; i < moved.length; i += 2) checkpoints.set(moved[i], BigInt(moved[i + 1]));
}
