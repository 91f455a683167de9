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
  const gens = await redis.mget(...names.map((n) => ks.active(n)));
  // A generation's own keys and its workspaces' keys ({ws:<id>} follows the second prefix).
  const bases = names.flatMap((n, i) => [ks.genPrefix(n, gens[i] ?? '0'), ks.wsGenPrefix(n, gens[i] ?? '0') + '{ws:']);
  // One SCAN over the prefix's read-model keys (the Redis may hold many other keys), then pipelines.
  const keys: Array<{ key: string; name: string; rel: string }> = [];
  let cursor = '0';
  do {
    const [next, page] = await redis.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}rm:*`, 'COUNT', 5000);
    cursor = next;
    for (const key of page) {
      const i = bases.findIndex((b) => key.startsWith(b));
      const rel = i < 0 ? '' : (i % 2 ? '{ws:' : '') + key.slice(bases[i].length);
      if (i >= 0 && !rel.startsWith('__checkpoint')) keys.push({ key, name: names[Math.floor(i / 2)], rel });
    }
  } while (cursor !== '0');
  const types = ((await redis.pipeline(keys.map((k) => ['type', k.key])).exec()) ?? []).map(([, t]) => t as string);
  const values = (await redis.pipeline(keys.map((k, i) => read(k.key, types[i]))).exec()) ?? [];
  const out: Record<string, Record<string, unknown>> = Object.fromEntries(names.map((n) => [n, {}]));
  keys.forEach((k, i) => {
    const v = values[i][1];
    out[k.name][k.rel] = types[i] === 'set' ? [...(v as string[])].sort() : types[i] === 'hash' ? hashOf(v as string[]) : v;
  });
  for (const n of names) out[n] = Object.fromEntries(Object.entries(out[n]).sort(([a], [b]) => (a < b ? -1 : 1)));
  return out;
}

function read(key: string, type: string): string[] {
  switch (type) {
    case 'string':
      return ['get', key];
    case 'hash':
      return ['hgetall', key];
    case 'set':
      return ['smembers', key];
    case 'zset':
      return ['zrange', key, '0', '-1', 'WITHSCORES'];
    case 'list':
      return ['lrange', key, '0', '-1'];
    default:
      return ['type', key];
  }
}

/** A pipelined HGETALL answers a flat [field, value, …] list. */
function hashOf(v: string[] | Record<string, string>): Record<string, string> {
  if (!Array.isArray(v)) return v;
  const out: Record<string, string> = {};
  for (let i = 0; i < v.length; i += 2) out[v[i]] = v[i + 1];
  return out;
}

/** Waits until every projection (every partition of it) has applied the store's head. */
export async function caughtUp(
  store: EventStore,
  redis: Redis,
  prefix: string,
  names: string[],
  partitions: number,
  timeoutMs = 60_000,
): Promise<void> {
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
  masterKey: string,
): Promise<{ live: Record<string, Record<string, unknown>>; replay: Record<string, Record<string, unknown>> }> {
  // The live processes' master key: the replay unwraps the same data keys (docs/SECURITY.md).
  const replay = await startTestServer({ ROLE: 'projector', EVENT_STORE: 'postgres', DATABASE_URL: databaseUrl, MASTER_KEY: masterKey });
  try {
    const names = projectionsOf(replay.services).map((p) => p.name);
    await caughtUp(store, redis, prefix, names, partitions);
    expect(await replay.services.progress.waitFor(await store.headPosition(), 60_000)).toBe(true);
    return { live: await dumpReadModels(redis, prefix, names), replay: await dumpReadModels(redis, replay.prefix, names) };
  } finally {
    await replay.close();
  }
}
