import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { disconnectRedis } from '../../src/platform/redis';

const run = promisify(execFile);

/** A Redis Cluster on free ports, each node in a temp dir of its own, with no persistence. */
export interface RedisClusterHandle {
  /** `127.0.0.1:<port>` of every node, primaries and replicas (REDIS_CLUSTER_NODES). */
  nodes: string[];
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** false: leave the nodes as they start, cluster nodes that serve no slot (default true). */
  create?: boolean;
  /** Replicas per primary (default 0): `primaries × (1 + replicas)` nodes in all. */
  replicas?: number;
  /** cluster-node-timeout: how long a primary may not answer before its replica takes over (default 5000). */
  nodeTimeoutMs?: number;
  timeoutMs?: number;
}

async function freePorts(n: number): Promise<number[]> {
  // Held open together, so the same port is not handed out twice; a cluster node also listens on
  // port + 10000 (its bus), so each port is kept below 55536.
  const servers = [];
  const ports: number[] = [];
  while (ports.length < n) {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    servers.push(srv);
    const port = (srv.address() as { port: number }).port;
    if (port < 55536) ports.push(port);
  }
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/**
 * One cluster node. It runs under a shell that kills it when this process's end of its stdin
 * closes: a test run that is killed (SIGKILL, a crashed jest) leaves no redis-server behind.
 */
function startNode(port: number, dir: string, nodeTimeoutMs: number): ChildProcess {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, 'nodes.conf'),
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
    '--save',
    "''",
    '--appendonly',
    'no',
    '--maxmemory-policy',
    'noeviction',
    '--daemonize',
    'no',
    '--logfile',
    join(dir, 'redis.log'),
  ];
  return spawn('sh', ['-c', `redis-server ${args.join(' ')} & pid=$!; read _; kill $pid 2>/dev/null; wait $pid`], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
}

async function answers(port: number): Promise<boolean> {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    disconnectRedis(r);
  }
}

async function clusterState(port: number): Promise<string> {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    const info = (await r.call('CLUSTER', 'INFO')) as string;
    return /cluster_state:(\w+)/.exec(info)?.[1] ?? '?';
  } catch {
    return 'unreachable';
  } finally {
    disconnectRedis(r);
  }
}

/** A primary (or a node that is not a replica) is "in sync" by definition; a replica once its link to its primary is up. */
async function inSync(port: number): Promise<boolean> {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    const info = await r.info('replication');
    return !/^role:slave/m.test(info) || /^master_link_status:up/m.test(info);
  } catch {
    return false;
  } finally {
    disconnectRedis(r);
  }
}

async function waitFor(what: string, ms: number, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`test Redis Cluster: ${what} within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts `primaries` cluster-enabled redis-servers (and `replicas` more per primary), joins them
 * with `redis-cli --cluster create` and resolves once every node says cluster_state:ok. With
 * `create: false` the nodes are left as they start: cluster nodes that serve no slot.
 */
export async function startRedisCluster(primaries = 3, opts: RedisClusterOptions = {}): Promise<RedisClusterHandle> {
  const { create = true, replicas = 0, nodeTimeoutMs = 5000, timeoutMs = 60_000 } = opts;
  const ports = await freePorts(primaries * (1 + replicas));
  const dirs = ports.map((p) => mkdtempSync(join(tmpdir(), `tollgate-cluster-${p}-`)));
  const procs = ports.map((p, i) => startNode(p, dirs[i], nodeTimeoutMs));
  const stop = async () => {
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.stdin?.end();
          }),
      ),
    );
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  try {
    for (const [i, port] of ports.entries()) {
      await waitFor(`node ${port} did not answer`, timeoutMs, async () => {
        if (procs[i].exitCode !== null)
          throw new Error(`test Redis Cluster: redis-server on port ${port} exited (see ${dirs[i]}/redis.log)`);
        return answers(port);
      });
    }
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    if (!create) return { nodes, stop };
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicas), '--cluster-yes'], {
      timeout: timeoutMs,
    });
    for (const port of ports)
      await waitFor(`node ${port} did not reach cluster_state:ok`, timeoutMs, async () => (await clusterState(port)) === 'ok');
    // A replica that has not synced once cannot take over (its data is too old to be elected), and
    // the first sync waits out repl-diskless-sync-delay (5 s): a cluster with replicas is ready after it.
    if (replicas) for (const port of ports) await waitFor(`node ${port} did not sync with its primary`, timeoutMs, () => inSync(port));
    return { nodes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
