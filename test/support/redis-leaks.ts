import { Redis } from 'ioredis';
import { disconnectRedis } from '../../src/platform/redis';

/** Keys a test run left behind under one test's prefix. */
export interface Leak {
  /** `db 8 of redis://…` or `cluster node 127.0.0.1:7001`. */
  where: string;
  /** The test's prefix (`<run>label:hex:`). */
  prefix: string;
  keys: number;
  example: string;
}

const escapeGlob = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** The test's prefix a key is under: the run prefix and the next two segments (uniquePrefix's `label:hex:`). */
function prefixOf(runPrefix: string, key: string): string {
  const rest = key.slice(runPrefix.length).split(':');
  return rest.length > 2 ? `${runPrefix}${rest[0]}:${rest[1]}:` : key;
}

async function scanInto(r: Redis, runPrefix: string, where: string, found: Map<string, Leak>, remove: boolean): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${escapeGlob(runPrefix)}*`, 'COUNT', 1000);
    cursor = next;
    // One UNLINK per key: on a cluster node a multi-key command across slots is CROSSSLOT.
    if (remove && keys.length) await Promise.all(keys.map((k) => r.unlink(k)));
    for (const key of keys) {
      const prefix = prefixOf(runPrefix, key);
      const id = `${where} ${prefix}`;
      const leak = found.get(id) ?? { where, prefix, keys: 0, example: key };
      leak.keys++;
      found.set(id, leak);
    }
  } while (cursor !== '0');
}

function client(opts: { url?: string; host?: string; port?: number }): Redis {
  const common = { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null, connectTimeout: 10_000 } as const;
  const r = opts.url ? new Redis(opts.url, common) : new Redis({ ...common, host: opts.host, port: opts.port });
  r.on('error', () => undefined);
  return r;
}

/**
 * Every key under `runPrefix` in every db of the server at `redisUrl` (not only the db the URL
 * names: a test that lost its db index writes to db 0) and on every primary of the cluster whose
 * nodes are given, grouped by the test prefix it is under. `runPrefix` must not be empty: this
 * looks only at what one run wrote, never at a whole db other runs share. With `remove`, the keys
 * found are deleted too (after a failed run, a shared Redis is left as clean as before it).
 */
export async function findLeaks(
  runPrefix: string,
  redisUrl: string,
  clusterNodes: readonly string[] = [],
  remove = false,
): Promise<Leak[]> {
  if (runPrefix.length < 4) throw new Error(`refusing to look for leaks under a prefix this short: "${runPrefix}"`);
  const found = new Map<string, Leak>();
  const server = client({ url: redisUrl });
  try {
    await server.connect();
    const keyspace = await server.info('keyspace');
    const dbs = [...keyspace.matchAll(/^db(\d+):keys=/gm)].map((m) => Number(m[1]));
    const u = new URL(redisUrl);
    for (const db of dbs) {
      await server.select(db);
      await scanInto(server, runPrefix, `db ${db} of ${u.protocol}//${u.host}`, found, remove);
    }
  } finally {
    disconnectRedis(server);
  }
  for (const node of clusterNodes) {
    const [host, port] = node.split(':');
    const r = client({ host, port: Number(port) });
    try {
      await r.connect();
      // Replicas hold copies: only primaries are counted.
      if (/^role:master/m.test(await r.info('replication'))) await scanInto(r, runPrefix, `cluster node ${node}`, found, remove);
    } finally {
      disconnectRedis(r);
    }
  }
  return [...found.values()].sort((a, b) => b.keys - a.keys);
}

/** One line per leaking prefix, for the error that fails the run. */
export function describeLeaks(leaks: readonly Leak[]): string {
  const total = leaks.reduce((n, l) => n + l.keys, 0);
  return [
    `this test run left ${total} Redis key${total === 1 ? '' : 's'} behind under ${leaks.length} test prefix${leaks.length === 1 ? '' : 'es'} (a test that does not clean up after itself; the label after the run prefix is the one it passed to uniquePrefix; the keys are removed now):`,
    ...leaks.map((l) => `  ${l.prefix} in ${l.where}: ${l.keys} key${l.keys === 1 ? '' : 's'}, e.g. ${l.example}`),
  ].join('\n');
}
