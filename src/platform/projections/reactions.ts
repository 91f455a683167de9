import type { Redis } from 'ioredis';
import type { RecordedEvent } from '../eventstore/port';
import type { Keyspace } from './keyspace';
import type { Reactor } from './projection';

/**
 * Runs each reactor over the events past its checkpoint, in order, then records its checkpoint
 * (after the projections committed: at least once, so reactors are idempotent). Updates `checkpoints`.
 */
export async function runReactors(
  reactors: readonly Reactor[],
  checkpoints: Map<string, bigint>,
  events: readonly RecordedEvent[],
  redis: Redis,
  ks: Keyspace,
): Promise<void> {
  for (const r of reactors) {
    const cp = checkpoints.get(r.name) ?? 0n;
    let last = cp;
    for (const e of events) {
      if (e.position <= last) continue;
      if (r.handles.has(e.type)) await r.react(e);
      last = e.position;
    }
    if (last > cp) {
      await redis.set(ks.reactorCheckpoint(r.name), last.toString());
      checkpoints.set(r.name, last);
    }
  }
}
