import type { Redis } from 'ioredis';
import type { RecordedEvent } from '../eventstore/port';
import type { Keyspace } from './keyspace';
import type { Reactor } from './projection';

/**
 * Runs each reactor over the events past its checkpoint, in order, then records the checkpoints
 * (after the projections committed: at least once, so reactors are idempotent). Updates `checkpoints`.
 * The reactors go side by side, each over the batch in order: they are independent consumers
 * (a checkpoint each), and most reactions are a read-model read, so one debit's three or four
 * reads overlap in one wait instead of one round trip after the other (on a projector short of
 * CPU every wake-up for a reply counts). If one fails, the others are let finish before the batch
 * is retried, so a retry never runs beside a reaction still in flight.
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
  const outcomes = await Promise.allSettled(
    reactors.map(async (r): Promise<[string, bigint] | null> => {
      const cp = checkpoints.get(r.name) ?? 0n;
      let last = cp;
      for (const e of events) {
        if (e.position <= last) continue;
        if (r.handles.has(e.type)) await r.react(e);
        last = e.position;
      }
      if (through > last) last = through;
      return last > cp ? [r.name, last] : null;
    }),
  );
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
  const moved = outcomes.flatMap((o) => (o.status === 'fulfilled' && o.value ? [o.value] : []));
  if (moved.length === 0) return;
  await redis.mset(...moved.flatMap(([name, last]) => [ks.reactorCheckpoint(name), last.toString()]));
  for (const [name, last] of moved) checkpoints.set(name, last);
}
