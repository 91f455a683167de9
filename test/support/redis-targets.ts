import { Cluster, Redis } from 'ioredis';
import { cleanupPrefix, TEST_REDIS_URL } from './redis';
import { disconnectRedis } from '../../src/platform/redis';

/**
 * The two kinds of Redis a test that touches Redis runs on: the one Redis (REDIS_URL) and the run's
 * 3-node Redis Cluster (TEST_REDIS_CLUSTER_NODES, started by test/support/needs-redis.js). A test
 * written once runs on both with
 *
 *   describe.each(REDIS_TARGETS)('on $name', (target) => { … target.connect() … })
 *
 * The cluster client is as the service opens it (src/platform/redis.ts connectCluster): no
 * autopipelining. A command that spans slots fails there with CROSSSLOT, so the same test proves
 * the keys it touches share a hash tag.
 */
export interface RedisTarget {
  name: string;
  /** A connection, handed out under the Redis type as the service does. */
  connect(): Redis;
  /** Deletes every key under `prefix` (on every primary). */
  cleanup(prefix: string): Promise<void>;
}

export const CLUSTER_NODES = (process.env.TEST_REDIS_CLUSTER_NODES ?? '').split(',').filter(Boolean);

const hostPort = (node: string) => {
  const at = node.lastIndexOf(':');
  return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
};

export const SINGLE_REDIS: RedisTarget = {
  name: 'one Redis',
  connect: () => new Redis(TEST_REDIS_URL),
  cleanup: async (prefix) => void (await cleanupPrefix(TEST_REDIS_URL, prefix)),
};

export const REDIS_CLUSTER: RedisTarget = {
  name: 'a 3-node Redis Cluster',
  connect: () => new Cluster(CLUSTER_NODES.map(hostPort), { enableAutoPipelining: false, shardedSubscribers: true }) as unknown as Redis,
  cleanup: async (prefix) => {
    if (!prefix || prefix.length < 3) throw new Error(`refusing to clean up a prefix this short: "${prefix}"`);
    for (const node of CLUSTER_NODES) {
      const r = new Redis({ ...hostPort(node), maxRetriesPerRequest: 1 });
      try {
        let cursor = '0';
        do {
          const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`, 'COUNT', 1000);
          cursor = next;
          // One UNLINK per key: on a cluster node a multi-key command across slots is CROSSSLOT.
          await Promise.all(keys.map((k) => r.unlink(k)));
        } while (cursor !== '0');
      } finally {
        disconnectRedis(r);
      }
    }
  },
};

/** Both, for describe.each. */
export const REDIS_TARGETS: RedisTarget[] = [SINGLE_REDIS, REDIS_CLUSTER];
