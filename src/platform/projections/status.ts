import type { Redis } from 'ioredis';
import type { EventStore } from '../eventstore/port';
import { Keyspace } from './keyspace';
import { loadProjectionState } from './apply-batch';

export interface ProjectionStatus {
  name: string;
  gen: string;
  checkpoint: string;
  head: string;
  /** head − checkpoint, in store positions (events for SQLite; bytes of log for EventStoreDB). */
  lag: string;
}

export async function projectionStatus(
  store: EventStore,
  redis: Redis,
  ks: Keyspace,
  names: string[],
): Promise<ProjectionStatus[]> {
  const head = await store.headPosition();
  const out: ProjectionStatus[] = [];
  for (const name of names) {
    const s = await loadProjectionState(redis, ks, name);
    const lag = head > s.checkpoint ? head - s.checkpoint : 0n;
    out.push({ name, gen: s.gen, checkpoint: s.checkpoint.toString(), head: head.toString(), lag: lag.toString() });
  }
  return out;
}
