import type { Redis } from 'ioredis';
import { projectionsOf } from '../../src/main';
import type { EventStore } from '../../src/platform/eventstore/port';
import { Keyspace } from '../../src/platform/projections/keyspace';
import { projectionStatus } from '../../src/platform/projections/status';
import { startTestServer } from './harness';
import { until } from './wait';

/**
 * Every read model's active generation, key by key (relative to the generation's prefix), without
 * the checkpoints: two Redis states that applied the same events once each dump equal, whatever
 * their generations or partitioning. An event applied twice or skipped shows as a difference.
 */
export async function dumpReadModels(redis: Redis, prefix: string, names: string[]): Promise<Record<string, Record<string, unknown>>> {
  const ks = new Keyspace(prefix);
  const out: Record<string, Record<string, unknown>> = {};
  for (const name of names) {
    const gen = (await redis.get(ks.active(name))) ?? '0';
    const base = ks.genPrefix(name, gen);
    const model: Record<string, unknown> = {};
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${base.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const rel = key.slice(base.length);
        if (rel.startsWith('__checkpoint')) continue;
        model[rel] = await valueOf(redis, key);
      }
    } while (cursor !== '0');
    out[name] = Object.fromEntries(Object.entries(model).sort(([a], [b]) => (a < b ? -1 : 1)));
  }
  return out;
}

async function valueOf(redis: Redis, key: string): Promise<unknown> {
  switch (await redis.type(key)) {
    case 'string':
      return redis.get(key);
    case 'hash':
      return redis.hgetall(key);
    case 'set':
      return (await redis.smembers(key)).sort();
    case 'zset':
      return redis.zrange(key, 0, -1, 'WITHSCORES');
    case 'list':
      return redis.lrange(key, 0, -1);
    default:
      return null;
  }
}

/** Waits until every projection (every partition of it) has applied the store's head. */
export async function caughtUp(store: EventStore, redis: Redis, prefix: string, names: string[], partitions: number, timeoutMs = 60_000): Promise<void> {
  await until(
    async () => (await projectionStatus(store, redis, new Keyspace(prefix), names, partitions)).every((s) => s.lag === '0'),
    timeoutMs,
    'the live projectors to catch up with the store',
    100,
  );
}

/**
 * A from-scratch replay of a PostgreSQL store (a projector of its own, in a fresh prefix) dumped
 * beside the live read models, once both have applied the head.
 */
export async function liveAndReplay(
  databaseUrl: string,
  store: EventStore,
  redis: Redis,
  prefix: string,
  partitions: number,
): Promise<{ live: Record<string, Record<string, unknown>>; replay: Record<string, Record<string, unknown>> }> {
  const replay = await startTestServer({ ROLE: 'projector', EVENT_STORE: 'postgres', DATABASE_URL: databaseUrl });
  try {
    const names = projectionsOf(replay.services).map((p) => p.name);
    await caughtUp(store, redis, prefix, names, partitions);
    expect(await replay.services.progress.waitFor(await store.headPosition(), 60_000)).toBe(true);
    return { live: await dumpReadModels(redis, prefix, names), replay: await dumpReadModels(redis, replay.prefix, names) };
  } finally {
    await replay.close();
  }
}
