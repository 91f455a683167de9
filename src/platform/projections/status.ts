import type { Redis } from 'ioredis';
import type { EventStore } from '../eventstore/port';
import { Keyspace } from './keyspace';
import { loadProjectionState } from './apply-batch';
import { partitionKeyspaces } from './partitions';

export interface ProjectionStatus {
  name: string;
  gen: string;
  checkpoint: string;
  head: string;
  /** head − checkpoint, in store positions (events for SQLite; bytes of log for EventStoreDB). */
  lag: string;
  /** With PROJECTION_PARTITIONS > 1: each partition's checkpoint and lag (the totals above are the lowest / highest). */
  partitions?: Array<{ partition: number; checkpoint: string; lag: string }>;
}

export async function projectionStatus(
  store: EventStore,
  redis: Redis,
  ks: Keyspace,
  names: string[],
  partitionCount = 1,
): Promise<ProjectionStatus[]> {
  const head = await store.headPosition();
  const out: ProjectionStatus[] = [];
  for (const name of names) {
    const s = await loadProjectionState(redis, ks, name);
    if (partitionCount <= 1) {
      const lag = head > s.checkpoint ? head - s.checkpoint : 0n;
      out.push({ name, gen: s.gen, checkpoint: s.checkpoint.toString(), head: head.toString(), lag: lag.toString() });
      continue;
    }
    const partitions = [];
    let min: bigint | null = null;
    for (const pks of partitionKeyspaces(ks.prefix, partitionCount)) {
      const cp = BigInt((await redis.get(pks.checkpoint(name, s.gen))) ?? '0');
      if (min === null || cp < min) min = cp;
      partitions.push({ partition: pks.index, checkpoint: cp.toString(), lag: (head > cp ? head - cp : 0n).toString() });
    }
    const total = min ?? 0n;
    out.push({
      name,
      gen: s.gen,
      checkpoint: total.toString(),
      head: head.toString(),
      lag: (head > total ? head - total : 0n).toString(),
      partitions,
    });
  }
  return out;
}
