import { Cluster, Redis, RedisOptions } from 'ioredis';

export class RedisUnavailable extends Error {
  override readonly name = 'RedisUnavailable';
}

/** How long a start-up connect and its first PING may take (REDIS_CONNECT_TIMEOUT_MS). */
export const DEFAULT_REDIS_CONNECT_TIMEOUT_MS = 10_000;

/** One Redis (REDIS_URL), or the seed nodes of a Redis Cluster (REDIS_CLUSTER_NODES, which wins). */
export type RedisTarget = string | { clusterNodes: readonly string[] };

export function redisTargetOf(config: { REDIS_URL: string; REDIS_CLUSTER_NODES?: readonly string[] }): RedisTarget {
  return config.REDIS_CLUSTER_NODES?.length ? { clusterNodes: config.REDIS_CLUSTER_NODES } : config.REDIS_URL;
}

/**
 * A connection that is known to work when this resolves, or a one-line reason naming REDIS_URL
 * (or REDIS_CLUSTER_NODES). `timeoutMs` bounds the connect and the first PING each: a busy host
 * answers late, not never.
 */
export async function connectRedis(
  target: RedisTarget,
  name: string,
  extra: RedisOptions = {},
  timeoutMs = DEFAULT_REDIS_CONNECT_TIMEOUT_MS,
): Promise<Redis> {
  // Until every key a request or a batch touches shares a hash tag, the rest of the service is
  // written against one Redis; a Cluster has the same commands (ioredis's Commander), so it is
  // handed out under that type. The service does not run on a cluster end to end yet.
  if (typeof target !== 'string') return (await connectCluster(target.clusterNodes, name, extra, timeoutMs)) as unknown as Redis;
  const url = target;
  const redis = new Redis(url, {
    lazyConnect: true,
    connectionName: `tollgate:${name}`,
    maxRetriesPerRequest: 3,
    retryStrategy: (times) => Math.min(times * 100, 2000),
    ...extra,
  });
  // Reported through command failures and readiness instead; the first one explains a failed connect.
  let firstError: Error | null = null;
  redis.on('error', (err: Error) => (firstError ??= err));
  try {
    await withTimeout(redis.connect(), timeoutMs);
    await withTimeout(redis.ping(), timeoutMs);
  } catch (err) {
    disconnectRedis(redis);
    // ioredis rejects connect() with a bare "Connection is closed."; the socket error says why.
    const reason = (firstError as Error | null)?.message || (err as Error).message || 'timed out';
    const hint = /no answer within/.test(reason) ? ' (REDIS_CONNECT_TIMEOUT_MS)' : '';
    throw new RedisUnavailable(`cannot reach Redis at REDIS_URL=${redactUrl(url)}: ${reason}${hint}`);
  }
  return redis;
}

/**
 * Closes a connection now, leaving nothing behind that holds the process open. ioredis's
 * disconnect() ends the socket and arms a timer (disconnectTimeout, 2 s) that destroys it unless
 * its 'close' comes first; on a socket that has already closed (a refused connect, a dropped
 * server) that 'close' never comes again, so the timer keeps a shutting-down process (or a jest
 * worker) alive for 2 s after everything else has stopped. A connection that has ended needs no
 * disconnect; one whose socket is gone but that would reconnect still needs it (to stop the
 * retries), and the dead socket's 'close' is replayed so the timer is cleared at once.
 */
export function disconnectRedis(r: Redis | Cluster): void {
  if (r.status === 'end') return;
  if (r instanceof Cluster) return r.disconnect();
  // `closed`: 'close' has been emitted (a socket being destroyed has not yet, and will clear the timer itself).
  const stream = r.stream as (typeof r.stream & { closed?: boolean }) | undefined;
  r.disconnect();
  if (stream?.closed) stream.emit('close', false);
}

const SLOTS = 16384;

/**
 * An ioredis Cluster over `nodes`, known to work when this resolves, or a one-line reason naming
 * REDIS_CLUSTER_NODES: every seed node must answer, be in cluster mode, and see every slot served
 * (a cluster with a slot no primary serves refuses the keys in it, so it stops the start instead).
 * Autopipelining stays off: with it, ioredis groups EVALSHA by digest rather than by key's slot.
 */
export async function connectCluster(
  nodes: readonly string[],
  name: string,
  extra: RedisOptions = {},
  timeoutMs = DEFAULT_REDIS_CONNECT_TIMEOUT_MS,
): Promise<Cluster> {
  const setting = `REDIS_CLUSTER_NODES=${nodes.join(',')}`;
  const seeds = nodes.map((n) => {
    const at = n.lastIndexOf(':');
    return { host: n.slice(0, at), port: Number(n.slice(at + 1)) };
  });
  for (const [i, seed] of seeds.entries()) await checkSeed(seed, nodes[i], setting, timeoutMs);
  const cluster = new Cluster(seeds, {
    lazyConnect: true,
    enableAutoPipelining: false,
    // SSUBSCRIBE (live usage) on the node serving the channel's slot.
    shardedSubscribers: true,
    slotsRefreshTimeout: timeoutMs,
    clusterRetryStrategy: (times) => Math.min(times * 100, 2000),
    redisOptions: { connectionName: `tollgate:${name}`, maxRetriesPerRequest: 3, connectTimeout: timeoutMs, ...extra },
  });
  let firstError: Error | null = null;
  cluster.on('error', (err: Error) => (firstError ??= err));
  try {
    await withTimeout(cluster.connect(), timeoutMs);
    await withTimeout(cluster.ping(), timeoutMs);
  } catch (err) {
    disconnectRedis(cluster);
    const reason = (firstError as Error | null)?.message || (err as Error).message || 'timed out';
    throw new RedisUnavailable(`cannot reach the Redis Cluster at ${setting}: ${reason}`);
  }
  return cluster;
}

/** One seed node: it answers, it is a cluster node, and its cluster serves every slot. */
async function checkSeed(seed: { host: string; port: number }, node: string, setting: string, timeoutMs: number): Promise<void> {
  const probe = new Redis({ ...seed, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs });
  let firstError: Error | null = null;
  probe.on('error', (err: Error) => (firstError ??= err));
  try {
    let info: string;
    try {
      await withTimeout(probe.connect(), timeoutMs);
      info = String(await withTimeout(probe.call('CLUSTER', 'INFO'), timeoutMs));
    } catch (err) {
      const reason = (firstError as Error | null)?.message || (err as Error).message || 'timed out';
      if (/cluster support disabled/i.test(reason))
        throw new RedisUnavailable(`Redis at ${node} is not a cluster node (${setting}): ${reason}`);
      throw new RedisUnavailable(`cannot reach Redis Cluster node ${node} (${setting}): ${reason}`);
    }
    const assigned = Number(/cluster_slots_assigned:(\d+)/.exec(info)?.[1] ?? 0);
    const failed = Number(/cluster_slots_fail:(\d+)/.exec(info)?.[1] ?? 0);
    const state = /cluster_state:(\w+)/.exec(info)?.[1] ?? '?';
    if (assigned < SLOTS || failed > 0 || state !== 'ok') {
      throw new RedisUnavailable(
        `the Redis Cluster at ${setting} does not serve every slot: ${node} sees ${assigned - failed} of ${SLOTS} slots served (cluster_state:${state})`,
      );
    }
  } finally {
    disconnectRedis(probe);
  }
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, '//***@');
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}

/** Whether `redis` is a Redis Cluster client (REDIS_CLUSTER_NODES), handed out under the Redis type. */
export function isCluster(redis: Redis): boolean {
  return redis.isCluster;
}

/** The primaries' connections: a Cluster's masters, or the one Redis itself. SCAN, KEYS and keyspace events are per node. */
export function primaries(redis: Redis): Redis[] {
  return isCluster(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
}

/**
 * SCAN MATCH `pattern` over every primary (never on a request path: admin tools, rebuild clean-up,
 * the sweeper's index of workspaces). `each` gets each page with the node it came from.
 */
export async function scanAll(
  redis: Redis,
  pattern: string,
  each: (node: Redis, keys: string[]) => Promise<void>,
  count = 1000,
): Promise<void> {
  for (const node of primaries(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      if (keys.length) await each(node, keys);
    } while (cursor !== '0');
  }
}

/**
 * UNLINKs keys a scanAll page found on `node`: in one command on one Redis; on a cluster node one
 * per key, pipelined (a page's keys span slots, and a multi-key UNLINK across slots is CROSSSLOT).
 */
export async function unlinkScanned(redis: Redis, node: Redis, keys: string[]): Promise<number> {
  if (!isCluster(redis)) return node.unlink(...keys);
  const p = node.pipeline();
  for (const k of keys) p.unlink(k);
  let n = 0;
  for (const [err, v] of (await p.exec()) ?? []) {
    if (err) throw err;
    n += Number(v);
  }
  return n;
}
