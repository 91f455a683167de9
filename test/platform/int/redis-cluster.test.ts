/**
 * The test Redis Cluster (3 primaries, started once per jest run by test/support/needs-redis.js and
 * named by TEST_REDIS_CLUSTER_NODES) and REDIS_CLUSTER_NODES: the connection factory gives a
 * Cluster, and a start against a cluster it cannot use fails with one line naming the setting.
 */
import { createServer } from 'node:net';
import { Cluster, Redis } from 'ioredis';
import { loadConfig } from '../../../src/platform/config';
import { connectRedis, disconnectRedis, redisTargetOf, RedisUnavailable } from '../../../src/platform/redis';
import { describeStartupError } from '../../../src/platform/startup-error';
import { startRedisCluster } from '../../support/redis-cluster';
import { uniquePrefix } from '../../support/redis';

const NODES = (process.env.TEST_REDIS_CLUSTER_NODES ?? '').split(',').filter(Boolean);

const direct = (node: string) => {
  const [host, port] = node.split(':');
  const r = new Redis({ host, port: Number(port), maxRetriesPerRequest: 1 });
  r.on('error', () => undefined);
  return r;
};

/** `host:port` of the primary serving `slot`, from CLUSTER SLOTS. */
async function ownerOf(r: Redis, slot: number): Promise<string> {
  const ranges = (await r.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
  const range = ranges.find(([from, to]) => slot >= from && slot <= to);
  if (!range) throw new Error(`no node serves slot ${slot}`);
  return `${range[2][0]}:${range[2][1]}`;
}

test('the run has a 3-node cluster serving every slot', async () => {
  expect(NODES).toHaveLength(3);
  const r = direct(NODES[0]);
  try {
    const info = String(await r.call('CLUSTER', 'INFO'));
    expect(info).toMatch(/cluster_state:ok/);
    expect(info).toMatch(/cluster_slots_assigned:16384/);
    expect(info).toMatch(/cluster_known_nodes:3/);
  } finally {
    disconnectRedis(r);
  }
});

test('a key set through the Cluster client from REDIS_CLUSTER_NODES lands on the node serving its slot, and only there', async () => {
  const config = loadConfig({ REDIS_CLUSTER_NODES: NODES.join(','), REDIS_URL: 'redis://127.0.0.1:1' });
  const cluster = await connectRedis(redisTargetOf(config), 'cluster-test');
  const nodes = NODES.map(direct);
  const prefix = uniquePrefix('cluster');
  // Keys spread over the slots: each must be found on the one primary CLUSTER SLOTS names for it.
  const keys = Array.from({ length: 12 }, (_, i) => `${prefix}k${i}`);
  try {
    expect(cluster).toBeInstanceOf(Cluster);
    for (const [i, key] of keys.entries()) await cluster.set(key, `v${i}`);
    const owners = new Set<string>();
    for (const [i, key] of keys.entries()) {
      const slot = Number(await nodes[0].call('CLUSTER', 'KEYSLOT', key));
      const owner = await ownerOf(nodes[0], slot);
      owners.add(owner);
      for (const [n, node] of NODES.entries()) {
        // A node that does not serve the slot answers MOVED: the key is not there.
        const got = await nodes[n].get(key).catch((err: Error) => err.message);
        if (node === owner) expect(got).toBe(`v${i}`);
        else expect(String(got)).toMatch(new RegExp(`^MOVED ${slot} `));
      }
    }
    // Twelve random slots all on one of three primaries would mean the client ignored the slots.
    expect(owners.size).toBeGreaterThan(1);
  } finally {
    // One DEL per key: the keys are in different slots (a multi-key DEL would be CROSSSLOT).
    for (const k of keys) await cluster.del(k);
    disconnectRedis(cluster);
    for (const n of nodes) disconnectRedis(n);
  }
});

test('a BullMQ connection over the cluster keeps maxRetriesPerRequest: null, and autopipelining is off', async () => {
  const cluster = (await connectRedis({ clusterNodes: NODES }, 'cluster-bullmq', { maxRetriesPerRequest: null })) as unknown as Cluster;
  try {
    expect(cluster.options.redisOptions?.maxRetriesPerRequest).toBeNull();
    expect(cluster.options.enableAutoPipelining).toBe(false);
  } finally {
    disconnectRedis(cluster);
  }
});

test('a seed node that cannot be reached stops the start with one line naming REDIS_CLUSTER_NODES', async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as { port: number }).port;
  await new Promise((r) => closed.close(r));
  const nodes = [...NODES.slice(0, 2), `127.0.0.1:${port}`];
  const err = await connectRedis(redisTargetOf(loadConfig({ REDIS_CLUSTER_NODES: nodes.join(',') })), 'cluster-down', {}, 2000).catch(
    (e: Error) => e,
  );
  expect(err).toBeInstanceOf(RedisUnavailable);
  const line = describeStartupError(err);
  expect(line.split('\n')).toHaveLength(1);
  expect(line).toContain(
    `cannot reach Redis Cluster node 127.0.0.1:${port} (REDIS_CLUSTER_NODES=${nodes.join(',')}): connect ECONNREFUSED`,
  );
});

test('a cluster that does not serve every slot stops the start with one line naming REDIS_CLUSTER_NODES', async () => {
  // Cluster nodes never joined nor given slots: cluster_state:fail, 0 slots.
  const bare = await startRedisCluster(1, { create: false });
  try {
    const err = await connectRedis({ clusterNodes: bare.nodes }, 'cluster-no-slots', {}, 5000).catch((e: Error) => e);
    expect(err).toBeInstanceOf(RedisUnavailable);
    const line = describeStartupError(err);
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toContain(
      `the Redis Cluster at REDIS_CLUSTER_NODES=${bare.nodes[0]} does not serve every slot: ${bare.nodes[0]} sees 0 of 16384 slots served (cluster_state:fail)`,
    );
  } finally {
    await bare.stop();
  }
});

test('a plain Redis named in REDIS_CLUSTER_NODES stops the start with one line naming the setting', async () => {
  const plain = new URL(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  const node = `${plain.hostname}:${plain.port || 6379}`;
  const err = await connectRedis({ clusterNodes: [node] }, 'cluster-plain', {}, 5000).catch((e: Error) => e);
  expect(err).toBeInstanceOf(RedisUnavailable);
  expect(describeStartupError(err)).toContain(`Redis at ${node} is not a cluster node (REDIS_CLUSTER_NODES=${node})`);
});

test('a cluster started with replicas is ready only once every replica has synced, so a SIGKILLed primary is taken over', async () => {
  // bench:cluster --redis-replicas 1 kills a primary under load: a replica that never synced would not be elected.
  const cluster = await startRedisCluster(3, { replicas: 1, nodeTimeoutMs: 1000 });
  const clients: Redis[] = [];
  const at = (node: string) => {
    const r = direct(node);
    clients.push(r);
    return r;
  };
  try {
    const infos = await Promise.all(cluster.nodes.map((n) => at(n).info('replication')));
    const replicas = infos.filter((i) => /^role:slave/m.test(i));
    expect(replicas).toHaveLength(3);
    for (const i of replicas) expect(i).toMatch(/^master_link_status:up/m);
    const r = infos.findIndex((i) => /^role:slave/m.test(i));
    const primaryPort = /^master_port:(\d+)/m.exec(infos[r])![1];
    const primary = at(`127.0.0.1:${primaryPort}`);
    const pid = Number(/^process_id:(\d+)/m.exec(await primary.info('server'))![1]);
    process.kill(pid, 'SIGKILL');
    const survivor = at(cluster.nodes[r]);
    for (let i = 0; !/^role:master/m.test(await survivor.info('replication')); i++) {
      if (i > 300) throw new Error('the replica did not take over within 30 s');
      await new Promise((res) => setTimeout(res, 100));
    }
  } finally {
    for (const c of clients) disconnectRedis(c);
    await cluster.stop();
  }
});
