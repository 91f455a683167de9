/**
 * The Redis of bench:cluster --redis-nodes (./cluster.bench.ts): one private redis-server (REDIS_URL,
 * as a deployment runs today), or a Redis Cluster of `primaries` (REDIS_CLUSTER_NODES) started by
 * test/support's cluster starter, with `replicas` per primary. Every redis-server can be put in a
 * CPU-capped cgroup of its own at the same quota (./cpu-throttle.ts), so that 1 and 3 primaries are
 * compared at equal CPU per node.
 *
 * What each node did is read from the node itself: `INFO cpu` (used_cpu_user + used_cpu_sys, the
 * server's own CPU, background threads included) and `INFO commandstats` (calls and usec per
 * command, the commands inside scripts counted under their own names as well as in EVALSHA's time).
 */
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { startRedisCluster, RedisClusterHandle } from '../support/redis-cluster';
import { sleep } from '../support/wait';
import { freePort } from '../support/free-port';

const run = promisify(execFile);

export interface RedisNode {
  port: number;
  /** The redis-server process (from INFO server: under the cluster starter it runs below a shell). */
  pid: number;
}

export interface BenchRedis {
  /** REDIS_URL, or REDIS_CLUSTER_NODES, for the api and projector processes. */
  env: Record<string, string>;
  cluster: boolean;
  /** Every redis-server, primaries and replicas. */
  nodes: RedisNode[];
  /** A client of the bench's own (an ioredis Cluster on a cluster). */
  client(): Redis;
  stop(): Promise<void>;
}

const direct = (port: number) => {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  return r;
};

/** Runs `fn` on a short-lived connection to one node. */
export async function onNode<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = direct(port);
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

const infoField = (text: string, k: string) => new RegExp(`^${k}:([^\\r\\n]*)`, 'm').exec(text)?.[1] ?? '';

async function serverPid(port: number): Promise<number> {
  return Number(infoField(await onNode(port, (r) => r.info('server')), 'process_id'));
}

/** One plain redis-server (no persistence), as the bench always started. */
async function single(): Promise<BenchRedis> {
  const port = await freePort();
  const proc: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  for (let i = 0; ; i++) {
    try {
      await onNode(port, (r) => r.ping());
      break;
    } catch {
      if (i > 200 || proc.exitCode !== null) throw new Error('redis-server did not start');
      await sleep(50);
    }
  }
  const url = `redis://127.0.0.1:${port}`;
  return {
    env: { REDIS_URL: url },
    cluster: false,
    nodes: [{ port, pid: proc.pid! }],
    client: () => new Redis(url),
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** `primaries` = 1: one plain redis-server; more: a Redis Cluster (with `replicas` per primary). */
export async function startBenchRedis(primaries: number, replicas: number, nodeTimeoutMs = 2000): Promise<BenchRedis> {
  if (primaries === 1 && replicas === 0) return single();
  const handle: RedisClusterHandle = await startRedisCluster(primaries, { replicas, nodeTimeoutMs });
  const ports = handle.nodes.map((n) => Number(n.split(':').pop()));
  const nodes = await Promise.all(ports.map(async (port) => ({ port, pid: await serverPid(port) })));
  return {
    env: { REDIS_CLUSTER_NODES: handle.nodes.join(',') },
    cluster: true,
    nodes,
    client: () =>
      new Cluster(
        ports.map((port) => ({ host: '127.0.0.1', port })),
        { enableAutoPipelining: false },
      ) as unknown as Redis,
    stop: () => handle.stop(),
  };
}

/** What one node reports: its CPU so far (ms) and its command calls and time so far. */
export interface NodeStat {
  port: number;
  role: 'master' | 'slave' | 'down';
  cpuMs: number;
  calls: number;
  usec: number;
}

export async function nodeStats(nodes: RedisNode[]): Promise<NodeStat[]> {
  return Promise.all(
    nodes.map(async ({ port }): Promise<NodeStat> => {
      try {
        const text = await onNode(port, (r) => r.info('all'));
        const cpu = 1000 * (Number(infoField(text, 'used_cpu_user')) + Number(infoField(text, 'used_cpu_sys')));
        let calls = 0;
        let usec = 0;
        for (const m of text.matchAll(/^cmdstat_[^:]+:calls=(\d+),usec=(\d+)/gm)) {
          calls += Number(m[1]);
          usec += Number(m[2]);
        }
        return { port, role: infoField(text, 'role') === 'slave' ? 'slave' : 'master', cpuMs: cpu, calls, usec };
      } catch {
        return { port, role: 'down', cpuMs: 0, calls: 0, usec: 0 };
      }
    }),
  );
}

/** Per node, what it did between two readings (a node down at either reading counts nothing). */
export function statDelta(a: NodeStat[], b: NodeStat[]): NodeStat[] {
  return b.map((s, i) =>
    s.role === 'down' || a[i].role === 'down'
      ? { ...s, cpuMs: 0, calls: 0, usec: 0 }
      : { ...s, cpuMs: s.cpuMs - a[i].cpuMs, calls: s.calls - a[i].calls, usec: s.usec - a[i].usec },
  );
}

/** The node ids and the slots each primary serves (CLUSTER NODES, read from any live node). */
export async function primaries(nodes: RedisNode[]): Promise<Array<{ id: string; port: number; slots: number }>> {
  for (const { port } of nodes) {
    try {
      const text = (await onNode(port, (r) => r.call('CLUSTER', 'NODES'))) as string;
      return text
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
        .filter((f) => f[2].includes('master') && !f[2].includes('fail'))
        .map((f) => ({
          id: f[0],
          port: Number(f[1].split('@')[0].split(':').pop()),
          slots: f.slice(8).reduce((n, r) => {
            const [lo, hi] = r.split('-').map(Number);
            return r.startsWith('[') ? n : n + (hi === undefined ? 1 : hi - lo + 1);
          }, 0),
        }));
    } catch {
      // that node is down: ask the next
    }
  }
  throw new Error('no cluster node answers CLUSTER NODES');
}

/** `redis-cli --cluster reshard`: moves `slots` slots from one primary to another, keys and all. */
export async function reshard(via: number, fromId: string, toId: string, slots: number): Promise<void> {
  await run(
    'redis-cli',
    [
      '--cluster',
      'reshard',
      `127.0.0.1:${via}`,
      '--cluster-from',
      fromId,
      '--cluster-to',
      toId,
      '--cluster-slots',
      String(slots),
      '--cluster-yes',
    ],
    { timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
  );
}

/**
 * Resolves once the primary on `deadPort` has been replaced: the live nodes' view has no primary
 * there and its slots served by others (its replica, promoted), and every live node says
 * cluster_state:ok. Until the node timeout passes the others still count the dead primary in.
 */
export async function failedOver(nodes: RedisNode[], deadPort: number, ms: number): Promise<void> {
  const live = nodes.filter((n) => n.port !== deadPort);
  const t0 = Date.now();
  for (;;) {
    const ps = await primaries(live).catch(() => []);
    if (ps.length && ps.every((p) => p.port !== deadPort) && ps.reduce((n, p) => n + p.slots, 0) === 16384) break;
    if (Date.now() - t0 > ms) throw new Error(`no replica took over from the primary on port ${deadPort} within ${ms / 1000} s`);
    await sleep(100);
  }
  await clusterOk(live, Math.max(1000, ms - (Date.now() - t0)));
}

/** Resolves once every live node says cluster_state:ok, or throws after `ms`. */
export async function clusterOk(nodes: RedisNode[], ms: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const states = await Promise.all(
      nodes.map(({ port }) =>
        onNode(port, (r) => r.call('CLUSTER', 'INFO') as Promise<string>)
          .then((t) => infoField(t, 'cluster_state'))
          .catch(() => 'down'),
      ),
    );
    if (states.every((s) => s === 'ok' || s === 'down')) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`the cluster did not reach cluster_state:ok within ${ms / 1000} s (${states.join(', ')})`);
    await sleep(100);
  }
}
