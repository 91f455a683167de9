/**
 * bench:cluster — api processes and projector processes over PostgreSQL and one Redis, in one run:
 * does a second projector (with PROJECTION_PARTITIONS=2) keep the read models' lag bounded under a
 * load one projector cannot keep up with?
 *
 *   npm run bench:cluster                     # prints a table (5–10 minutes on a loaded 2-core box)
 *   npm run bench:cluster -- --json           # the figures as JSON instead
 *   npm run bench:cluster -- --write          # also replaces "## Cluster, last run" in docs/BENCHMARKS.md
 *   options: --layouts 2x1x1,2x2x2  (api processes x projector processes x PROJECTION_PARTITIONS)
 *            --rate <req/s> (30, over all api processes) --duration <s> (20) --rounds <n> (2; 0: the cost phase only)
 *            --connections <n per api> (16) --workspaces <n> (32)
 *            --projector-share <0..1> (0.1; 1: unthrottled)
 *            --throttle cgroup|signal (default: cgroup where the cgroup cpu controller is writable, else signal)
 *            --period-ms <ms> (cgroup: the shortest of 20 ms or more with a 1 ms quota, e.g. 20 at 10%, 50 at 2%; signal: 200)
 *            --staggered (signal only: each projector's window apart)
 *            --cost-rate <req/s> (30) --cost-seconds <s> (8; 0 skips the cost phase)
 *            --redis-url <url>: use that Redis (with a prefix of its own) instead of a private one
 *   npm run bench:cluster -- --redis-nodes 1|3 [--redis-replicas 0|1]: Redis scaling instead (below, "--redis-nodes")
 *   BENCH_PROJECTOR_NODE_ARGS="--cpu-prof --cpu-prof-dir=<dir>": node options for the projector processes alone
 *
 * Each layout round gets a fresh PostgreSQL database (BENCH_DATABASE_URL, TEST_DATABASE_URL or
 * postgres://postgres@127.0.0.1:5432/postgres as the admin connection) and a fresh Redis prefix;
 * rounds alternate the layouts. Every process is a child (./cluster-role.ts, bundled with esbuild),
 * configured by the environment exactly as `tollgate serve` is; the instant upstream is the
 * OpenAI-wire test server with a fixed one-chunk reply. Load: autocannon at a fixed rate (open loop,
 * `overallRate`), split evenly over the api processes, non-streaming requests to the OpenAI-compatible
 * route, keys (one per workspace) taken in turn so the events spread over the partitions.
 *
 * The projector throttle is a CPU share, applied to every projector process alike. It stands for a
 * projector that has less CPU than the load needs, which on a free machine takes a far higher
 * request rate than a 2-core box can drive. Two ways, and the table says which ran:
 *  - cgroup (the default where it can run: root, or a delegated hierarchy; ./cpu-throttle.ts): each
 *    projector in a cgroup of its own with a CFS quota of share × period of CPU per period (v1
 *    cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max). Only CPU used is charged: a process waiting
 *    on Redis or PostgreSQL spends none of its quota, as on a slow CPU; once it has used its quota
 *    it waits for the next period (at most 20-100 ms here). The table also gives, per projector, the
 *    share of periods in which it used up its quota: near 100% it wanted more CPU than it had.
 *    The cgroups are removed however the bench ends (on SIGINT/SIGTERM, an error, or a hard exit;
 *    a later run removes empty ones left by a bench that was SIGKILLed).
 *  - signal (--throttle signal, or where cgroups are not writable): each period the bench sends
 *    SIGCONT, and SIGSTOP after share × period (what `cpulimit` does). A stopped process also stops
 *    reading replies, so every round trip in flight at a stop waits for the next window: lag comes
 *    in steps of the period, and the figures are not those of a slow CPU.
 *
 * Lag is sampled every 250 ms with the code behind the status API and CLI (`projectionStatus`: each
 * partition's checkpoint, the lowest over the projections) and turned into seconds as the
 * `tollgate_projection_lag_seconds` gauge does: the age of the oldest event not yet applied.
 *
 * The cost phase runs the first layout unthrottled at --cost-rate with Redis MONITOR on, and counts
 * per request: appends (the processes' own `tollgate_eventstore_append_duration_seconds_count`),
 * events (counted in the store), Redis commands sent and run inside scripts, by role (each MONITOR line's
 * client port is mapped to its process through /proc/<pid>/fd and /proc/net/tcp), and CPU per request
 * of every process (/proc/<pid>/stat), Redis's included when it is private. What the same processes
 * do in an idle window of the same length (lease renewals, readiness polls) is subtracted first.
 *
 * --redis-nodes 1|3 [--redis-replicas 0|1] (./redis-nodes.ts): is Redis what scales? One private
 * redis-server (REDIS_URL) or a Redis Cluster of 3 primaries (REDIS_CLUSTER_NODES, started by
 * test/support/redis-cluster.ts), each redis-server in a cgroup of its own with the same CPU quota
 * (--redis-share, 0.01 of a core; applied once the processes have seeded) so that Redis is the wall;
 * the first --layouts entry (2x1x1) runs unthrottled under a closed loop (--connections per api, 8),
 * and the table gives the requests/s served, Redis CPU and commands per request per node and in all
 * (INFO cpu, INFO commandstats) and the busiest primary's share. --faults (with --redis-replicas 1:
 * kill,reshard by default; `none` anywhere, as a control) then run each under open-loop load
 * (--rate): a primary SIGKILLed (until its replica serves its slots), or 1,000 slots resharded with
 * redis-cli, a third of the way in; then the 503s callers saw, the debits in the store (none
 * doubled, every 2xx debited) and `tollgate ledger verify` (balances and ledger against a replay).
 * --write replaces "## Redis nodes, last run" in docs/BENCHMARKS.md.
 *
 * The bench stops its children on exit (SIGCONT then SIGTERM, SIGKILL on a hard exit; a child also
 * exits when its stdin closes), removes its cgroups, drops its databases and deletes its Redis keys.
 */
import autocannon from 'autocannon';
import { ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { PostgresEventStore } from '../../src/platform/eventstore/postgres';
import { Keyspace } from '../../src/platform/projections/keyspace';
import { projectionStatus } from '../../src/platform/projections/status';
import { bundleChild, Child } from '../support/child-process';
import { BenchRedis, failedOver, nodeStats, primaries, reshard, startBenchRedis, statDelta } from './redis-nodes';
import { CgroupCpu, CgroupThrottle, cfsQuota, defaultPeriodMs, detectCgroupCpu, removeStale, ThrottleStat, writable } from './cpu-throttle';
import { createTestDatabase, TestDatabase as Database } from '../support/postgres';
import { cleanupPrefix, uniquePrefix } from '../support/redis';
import { sleep } from '../support/wait';
import { numberArg, percentile, replaceDocSection } from './bench-http';
import { freePort } from '../support/free-port';

const ADMIN_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

const PATH = '/external/api/inference/openai/v1/chat/completions';
const SAMPLE_MS = 250;
const CLOCK_TICKS = 100; // USER_HZ on Linux

const stringArg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};

interface Layout {
  apis: number;
  projectors: number;
  partitions: number;
}
const layoutName = (l: Layout) =>
  `${l.apis} api, ${l.projectors} projector${l.projectors > 1 ? 's' : ''}, ${l.partitions} partition${l.partitions > 1 ? 's' : ''}`;

function parseLayouts(s: string): Layout[] {
  return s.split(',').map((part) => {
    const m = /^(\d+)x(\d+)x(\d+)$/.exec(part.trim());
    if (!m) throw new Error(`--layouts: "${part}" is not <apis>x<projectors>x<partitions>`);
    const [apis, projectors, partitions] = m.slice(1).map(Number);
    if (apis < 1 || projectors < 1 || partitions < 1) throw new Error(`--layouts: "${part}" needs at least 1 of each`);
    return { apis, projectors, partitions };
  });
}

// ---------------------------------------------------------------- processes the bench owns

const owned = new Set<ChildProcess>();
/** The processes the bench is stopping itself (any other exit is reported). */
const stopping = new Set<ChildProcess>();
const databases = new Set<Database>();
const prefixes = new Set<string>();
let redisUrl = '';
/** How the api and projector processes reach Redis: REDIS_URL, or REDIS_CLUSTER_NODES (--redis-nodes). */
let redisEnv: Record<string, string> = {};
/** The bench's own client of that Redis (an ioredis Cluster on a cluster). */
let redisClient = (): Redis => new Redis(redisUrl);
/** --redis-nodes: the redis-servers the bench started (stopped last, however the bench ends). */
let benchRedis: BenchRedis | null = null;
/** The private redis-server, stopped last (the prefixes are cleaned through it first). */
let redisServer: ChildProcess | null = null;

/** The throttles in force: released (children continued, cgroups removed) however the bench ends. */
const throttles = new Set<() => void>();
const releaseThrottles = () => {
  for (const release of throttles) release();
  throttles.clear();
};

/** Last resort (a hard exit): no child stays behind, stopped or running, and no cgroup of the bench's. */
process.on('exit', () => {
  for (const c of owned) {
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
  releaseThrottles();
});

/** Set once the bench cleans up: no process is started (or started again) after that. */
let shuttingDown = false;

async function cleanUp(): Promise<void> {
  shuttingDown = true;
  releaseThrottles();
  const children = [...owned].filter((c) => c !== redisServer);
  for (const c of children) c.kill('SIGCONT');
  await Promise.all(children.map((c) => stopProcess(c)));
  for (const db of databases) await db.drop().catch(() => undefined);
  databases.clear();
  if (redisUrl) for (const p of prefixes) await cleanupPrefix(redisUrl, p).catch(() => undefined);
  prefixes.clear();
  if (redisServer) await stopProcess(redisServer);
  if (benchRedis) await benchRedis.stop().catch(() => undefined);
  benchRedis = null;
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    process.stderr.write(`${sig}: stopping the cluster and cleaning up …\n`);
    void cleanUp().finally(() => process.exit(130));
  });
}

async function stopProcess(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) {
    owned.delete(c);
    return;
  }
  const exited = new Promise<void>((r) => c.once('exit', () => r()));
  stopping.add(c);
  c.kill('SIGCONT');
  c.kill('SIGTERM');
  const hard = setTimeout(() => c.kill('SIGKILL'), 8000);
  await exited;
  clearTimeout(hard);
  owned.delete(c);
}

/** A Redis of the bench's own (no persistence): exact command counts, and its CPU is measurable. */
async function privateRedis(): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  owned.add(proc);
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  for (let i = 0; ; i++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch {
      if (i > 100 || proc.exitCode !== null) throw new Error('redis-server did not start');
      await sleep(50);
    }
  }
  probe.disconnect();
  return { url, proc };
}

interface Part {
  child: Child;
  port: number;
  metricsPort: number;
  projections: string[];
  secrets: string[];
}

/** Starts one process; a start that fails (on a loaded machine Redis can miss the 3 s connect) is tried up to 5 times. */
async function launch(bundle: string[], env: Record<string, string>, attempt = 1): Promise<Part> {
  const child = new Child(bundle, env);
  owned.add(child.proc);
  void child.exited.then(({ code, signal }) => {
    if (!stopping.has(child.proc)) {
      // An error's own line first: an ioredis ReplyError's dump (e.g. a CROSSSLOT's key list) can fill the tail.
      const cause = /^\w*Error\b.*$/m.exec(child.stderr)?.[0];
      process.stderr.write(
        `a ${env.ROLE ?? env.BENCH_PART} process exited (${signal ?? code}): ${cause ? `${cause} … ` : ''}${child.stderr.trim().slice(-600)}\n`,
      );
    }
  });
  try {
    const [line] = await child.waitFor(/^\{.*\}$/, 120_000);
    return { child, ...(JSON.parse(line) as Omit<Part, 'child'>) };
  } catch (err) {
    await stopProcess(child.proc);
    if (attempt >= 5 || shuttingDown) throw err;
    process.stderr.write(`a ${env.ROLE ?? env.BENCH_PART} process did not start (${(err as Error).message.split('\n')[0]}); again\n`);
    await sleep(1000);
    return launch(bundle, env, attempt + 1);
  }
}

// ---------------------------------------------------------------- one cluster

interface Cluster {
  layout: Layout;
  db: Database;
  prefix: string;
  apis: Part[];
  projectors: Part[];
  secrets: string[];
  store: PostgresEventStore;
  redis: Redis;
  projections: string[];
}

/** The partition counts keys are spread evenly over (the largest of the run's layouts). */
let spread = 1;

async function startCluster(layout: Layout, bundle: string[], upstreamUrl: string, workspaces: number): Promise<Cluster> {
  const db = await createTestDatabase('cluster', { adminUrl: ADMIN_URL });
  databases.add(db);
  const prefix = uniquePrefix('benchcluster');
  prefixes.add(prefix);
  const env = (role: string): Record<string, string> => ({
    ROLE: role,
    EVENT_STORE: 'postgres',
    DATABASE_URL: db.url,
    ...redisEnv,
    REDIS_PREFIX: prefix,
    PROJECTION_PARTITIONS: String(layout.partitions),
    HOST: '127.0.0.1',
    PORT: '0',
    METRICS_PORT: '0',
    NODE_ENV: 'production',
    LOG_LEVEL: 'error',
    SWEEPER_ENABLED: 'false',
    MODEL_BACKEND: 'openai',
    OPENAI_BASE_URL: upstreamUrl,
    OPENAI_API_KEY: 'sk-bench',
  });
  // Projectors first: the first creates the schema; each api seeds through the projectors.
  const projectors: Part[] = [];
  // BENCH_PROJECTOR_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", which NODE_OPTIONS refuses) go to the projector processes alone.
  const projectorArgs = [...(process.env.BENCH_PROJECTOR_NODE_ARGS ?? '').split(' ').filter(Boolean), ...bundle];
  for (let i = 0; i < layout.projectors; i++) projectors.push(await launch(projectorArgs, env('projector')));
  const apis: Part[] = [await launch(bundle, { ...env('api'), BENCH_SEED_KEYS: String(workspaces), BENCH_SPREAD: String(spread) })];
  for (let i = 1; i < layout.apis; i++) apis.push(await launch(bundle, env('api')));
  const store = new PostgresEventStore({ connectionString: db.url, poolSize: 2 });
  const redis = redisClient();
  return { layout, db, prefix, apis, projectors, secrets: apis[0].secrets, store, redis, projections: apis[0].projections };
}

async function stopCluster(c: Cluster): Promise<void> {
  await Promise.all([...c.apis, ...c.projectors].map((p) => stopProcess(p.child.proc)));
  c.redis.disconnect();
  await c.store.close();
  await c.db.drop().catch((err) => process.stderr.write(`could not drop ${c.db.name}: ${(err as Error).message}\n`));
  databases.delete(c.db);
  if (redisUrl) await cleanupPrefix(redisUrl, c.prefix).catch(() => undefined);
  prefixes.delete(c.prefix);
}

type ThrottleKind = 'cgroup' | 'signal';

interface ThrottleOptions {
  throttle: ThrottleKind;
  share: number;
  periodMs: number;
  staggered: boolean;
  /** The cpu hierarchy (with --throttle cgroup). */
  cgroup: CgroupCpu | null;
}

interface Throttle {
  release(): void;
  /** Per process: the kernel's period counts so far (cgroup throttle only). */
  stats(): ThrottleStat[] | null;
}

/** Throttles `procs` to a CPU share each, as chosen (--throttle); registered for release on any exit. */
function throttle(procs: ChildProcess[], o: ThrottleOptions): Throttle {
  if (o.share >= 1) return { release: () => undefined, stats: () => null };
  if (o.throttle === 'cgroup') {
    const cg = new CgroupThrottle(o.cgroup!, o.share, o.periodMs);
    const release = () => cg.release();
    throttles.add(release);
    try {
      for (const p of procs) cg.add(p.pid!);
    } catch (err) {
      throttles.delete(release);
      release();
      throw err;
    }
    return { release: () => (throttles.delete(release), release()), stats: () => cg.stats() };
  }
  const release = signalThrottle(procs, o.share, o.periodMs, o.staggered);
  throttles.add(release);
  return { release: () => (throttles.delete(release), release()), stats: () => null };
}

/**
 * The signal throttle (--throttle signal, and where cgroups are not writable): SIGCONT every
 * period, SIGSTOP after share × period. Returns its stop. A stopped process does not read the
 * replies it waits on either, so each Redis or PostgreSQL round trip in flight at a stop costs the
 * rest of the period: this models a process that is off the CPU in windows, not a slow CPU.
 * `staggered`: each process runs in a window of its own (process j of n starts j/n of a period
 * later), as separate `cpulimit`s or separate machines would; else every process runs in the same
 * window, where they and the Redis they all wait on compete for the same moments of CPU.
 */
function signalThrottle(procs: ChildProcess[], share: number, periodMs: number, staggered = false): () => void {
  const timers = new Set<NodeJS.Timeout>();
  const signal = (group: ChildProcess[], s: NodeJS.Signals) => {
    for (const p of group) if (p.exitCode === null && p.signalCode === null) p.kill(s);
  };
  const groups = staggered ? procs.map((p) => [p]) : [procs];
  const ticks = groups.map((group, j) => {
    let tick: NodeJS.Timeout | null = null;
    const start = setTimeout(
      () => {
        timers.delete(start);
        tick = setInterval(() => {
          signal(group, 'SIGCONT');
          const stop = setTimeout(() => (timers.delete(stop), signal(group, 'SIGSTOP')), share * periodMs);
          timers.add(stop);
        }, periodMs);
      },
      (j * periodMs) / groups.length,
    );
    timers.add(start);
    return () => tick && clearInterval(tick);
  });
  return () => {
    for (const t of ticks) t();
    for (const t of timers) clearTimeout(t);
    signal(procs, 'SIGCONT');
  };
}

/**
 * --throttle: cgroup when a cpu hierarchy is there and writable (stale cgroups of dead benches are
 * removed first), else signal; asked for explicitly, cgroup fails if it cannot run.
 */
function chooseThrottle(asked: string): { throttle: ThrottleKind; cgroup: CgroupCpu | null; why: string } {
  if (asked === 'signal') return { throttle: 'signal', cgroup: null, why: 'asked for' };
  if (asked !== 'cgroup' && asked !== 'auto') throw new Error(`--throttle must be cgroup, signal or auto (got "${asked}")`);
  const cg = detectCgroupCpu();
  if (cg) for (const name of removeStale(cg)) process.stderr.write(`removed the stale cgroup ${name}\n`);
  const ok = cg !== null && writable(cg);
  if (ok) return { throttle: 'cgroup', cgroup: cg, why: `cgroup v${cg.version} at ${cg.dir}` };
  const why = cg ? `the cgroup hierarchy at ${cg.dir} is not writable` : 'no cgroup cpu controller found';
  if (asked === 'cgroup') throw new Error(`--throttle cgroup: ${why}`);
  return { throttle: 'signal', cgroup: null, why };
}

// ---------------------------------------------------------------- measuring

interface LagSample {
  t: number;
  /** Per partition: events not applied yet by its slowest projection, and the age of the oldest. */
  events: number[];
  seconds: number[];
}

async function sampleLag(c: Cluster): Promise<LagSample> {
  const t = Date.now();
  const st = await projectionStatus(c.store, c.redis, new Keyspace(c.prefix), c.projections, c.layout.partitions);
  const head = BigInt(st[0]?.head ?? '0');
  const events: number[] = [];
  const seconds: number[] = [];
  for (let p = 0; p < c.layout.partitions; p++) {
    const cp = st.reduce((min, s) => {
      const v = BigInt(c.layout.partitions > 1 ? s.partitions![p].checkpoint : s.checkpoint);
      return v < min ? v : min;
    }, head);
    events.push(Number(head - cp));
    if (cp >= head) {
      seconds.push(0);
      continue;
    }
    const next = (await c.store.readAll({ fromPosition: cp, maxCount: 2 })).find((e) => e.position > cp);
    seconds.push(next ? Math.max(0, (Date.now() - Date.parse(next.created)) / 1000) : 0);
  }
  return { t, events, seconds };
}

/**
 * Events stored after position `from` (up to `to`), counted: PostgreSQL positions are made from
 * transaction ids (schema version 3: xid << 16 plus the index), so head minus head is not a count.
 */
async function eventsAfter(store: PostgresEventStore, from: bigint, to?: bigint): Promise<number> {
  let n = 0;
  for (let at = from; ;) {
    const page = (await store.readAll({ fromPosition: at, maxCount: 5000 })).filter(
      (e) => e.position > at && (to === undefined || e.position <= to),
    );
    n += page.length;
    if (page.length === 0) return n;
    at = page[page.length - 1].position;
  }
}

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** Appends this process has made that succeeded (its own /metrics). */
async function appendsOf(p: Part): Promise<number> {
  if (!p.metricsPort) return 0;
  const text = await (await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)).text();
  const m = /^tollgate_eventstore_append_duration_seconds_count\{outcome="ok"\} (\d+)/m.exec(text);
  return m ? Number(m[1]) : 0;
}

/** autocannon at `rate` req/s against each api in turn of `c.apis` (rate split evenly), keys in turn. */
async function drive(
  c: Cluster,
  rate: number,
  seconds: number,
  connections: number,
  onStatus?: (status: number, requestId: string | undefined) => void,
): Promise<autocannon.Result[]> {
  let n = 0;
  const perApi = rate / c.apis.length;
  return Promise.all(
    c.apis.map(
      (api) =>
        new Promise<autocannon.Result>((resolve, reject) => {
          autocannon(
            {
              url: `http://127.0.0.1:${api.port}`,
              connections,
              duration: seconds,
              // rate 0: closed loop, each connection sends its next request when the last is answered.
              ...(rate > 0 ? { overallRate: perApi } : {}),
              requests: [
                {
                  method: 'POST',
                  path: PATH,
                  ...(onStatus
                    ? {
                        onResponse: (status: number, _body: string, _ctx: object, headers?: IncomingHttpHeaders) =>
                          onStatus(status, headers?.['x-request-id'] as string | undefined),
                      }
                    : {}),
                  setupRequest: (req) => {
                    const i = n++;
                    return {
                      ...req,
                      headers: { 'content-type': 'application/json', authorization: `Bearer ${c.secrets[i % c.secrets.length]}` },
                      body: JSON.stringify({
                        model: 'service_3_pi',
                        max_tokens: 64,
                        messages: [
                          { role: 'system', content: 'Answer in one sentence.' },
                          { role: 'user', content: `Hi! What is the weather usually like in spring? (request ${i})` },
                        ],
                      }),
                    };
                  },
                },
              ],
            },
            (err, result) => (err ? reject(err) : resolve(result)),
          );
        }),
    ),
  );
}

interface RoundResult {
  layout: string;
  rps: number;
  p50: number;
  p99: number;
  bad: number;
  partitions: Array<{
    partition: number;
    lagP50s: number;
    lagP99s: number;
    lagMaxS: number;
    lagEndS: number;
    lagEndEvents: number;
    trendSps: number;
  }>;
  /** After the load stopped (throttle still on): time until every partition caught up, or null. */
  drainS: number | null;
  apiCpuMsPerRequest: number;
  projectorCpuUsPerEvent: number;
  /** The private redis-server's CPU per request (null with --redis-url). */
  redisCpuMsPerRequest: number | null;
  eventsPerRequest: number;
  /**
   * Per projector, cgroup throttle: of the periods during the load in which it ran, the fraction
   * in which it used its whole quota and was held (near 1: it wanted more CPU than its share).
   */
  quotaSpent: number[] | null;
}

async function round(
  layout: Layout,
  bundle: string[],
  upstreamUrl: string,
  o: { rate: number; seconds: number; connections: number; workspaces: number } & ThrottleOptions,
): Promise<RoundResult> {
  const c = await startCluster(layout, bundle, upstreamUrl, o.workspaces);
  const held = throttle(
    c.projectors.map((p) => p.child.proc),
    o,
  );
  try {
    await drive(c, o.rate, 3, o.connections); // warm-up: JIT, pools
    const procs = [...c.apis, ...c.projectors, ...(redisServer ? [{ child: { proc: redisServer } }] : [])].map((p) => p.child.proc.pid!);
    const cpu0 = procs.map(cpuMs);
    const head0 = await c.store.headPosition();
    const stat0 = held.stats();
    const samples: LagSample[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const t0 = Date.now();
        // On SIGINT the cleanup drops the database under the sampler: that is not a failure to report.
        const sample = await sampleLag(c).catch((err: unknown) => {
          if (shuttingDown) return null;
          throw err;
        });
        if (!sample) return;
        samples.push(sample);
        await sleep(Math.max(0, SAMPLE_MS - (Date.now() - t0)));
      }
    })();
    const results = await drive(c, o.rate, o.seconds, o.connections);
    sampling = false;
    await sampler;
    const cpu1 = procs.map(cpuMs);
    const stat1 = held.stats();
    const events = await eventsAfter(c.store, head0);
    const requests = results.reduce((a, r) => a + r.requests.total, 0);
    const apiCpu = c.apis.reduce((a, _, i) => a + cpu1[i] - cpu0[i], 0);
    const projCpu = c.projectors.reduce((a, _, j) => a + cpu1[c.apis.length + j] - cpu0[c.apis.length + j], 0);

    // Drain: how long the throttled projectors take to catch up once the load stops (at most 20 s).
    const stopAt = Date.now();
    let drainS: number | null = null;
    while (Date.now() - stopAt < 20_000) {
      const s = await sampleLag(c);
      if (s.events.every((e) => e === 0)) {
        drainS = (Date.now() - stopAt) / 1000;
        break;
      }
      await sleep(100);
    }
    const half = samples.filter((s) => s.t >= samples[0].t + (samples[samples.length - 1].t - samples[0].t) / 2);
    const partitions = Array.from({ length: layout.partitions }, (_, p) => {
      const secs = samples.map((s) => s.seconds[p]).sort((a, b) => a - b);
      const last = samples[samples.length - 1];
      return {
        partition: p,
        lagP50s: percentile(secs, 50),
        lagP99s: percentile(secs, 99),
        lagMaxS: secs[secs.length - 1],
        lagEndS: last.seconds[p],
        lagEndEvents: last.events[p],
        trendSps: slope(half.map((s) => [(s.t - half[0].t) / 1000, s.seconds[p]])),
      };
    });
    return {
      layout: layoutName(layout),
      rps: results.reduce((a, r) => a + r.requests.average, 0),
      p50: Math.max(...results.map((r) => r.latency.p50)),
      p99: Math.max(...results.map((r) => r.latency.p99)),
      bad: results.reduce((a, r) => a + r.non2xx + r.errors, 0),
      partitions,
      drainS,
      apiCpuMsPerRequest: apiCpu / Math.max(1, requests),
      projectorCpuUsPerEvent: (1000 * projCpu) / Math.max(1, events),
      redisCpuMsPerRequest: redisServer ? (cpu1[procs.length - 1] - cpu0[procs.length - 1]) / Math.max(1, requests) : null,
      eventsPerRequest: events / Math.max(1, requests),
      quotaSpent:
        stat0 && stat1
          ? stat1.map((b, j) => {
              const periods = b.periods - stat0[j].periods;
              return periods ? (b.throttled - stat0[j].throttled) / periods : 0;
            })
          : null,
    };
  } finally {
    held.release();
    await stopCluster(c);
  }
}

/** Least-squares slope of y over x (lag seconds gained per second of load). */
function slope(points: Array<[number, number]>): number {
  if (points.length < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / points.length;
  const my = points.reduce((a, [, y]) => a + y, 0) / points.length;
  const num = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const den = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return den ? num / den : 0;
}

// ---------------------------------------------------------------- the cost of one request

/** Local ports of `pid`'s TCP connections to `remotePort` (its Redis clients). */
function clientPortsOf(pid: number, remotePort: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9])) continue;
      if (parseInt(f[2].split(':')[1], 16) === remotePort) ports.push(parseInt(f[1].split(':')[1], 16));
    }
  }
  return ports;
}

interface Costs {
  layout: string;
  rate: number;
  requests: number;
  appendsPerRequest: { api: number; projector: number };
  eventsPerRequest: number;
  redisPerRequest: { api: { sent: number; inScripts: number }; projector: { sent: number; inScripts: number } };
  topApiCommands: Array<[string, number]>;
  topProjectorCommands: Array<[string, number]>;
  cpuMsPerRequest: { api: number; projector: number; redis: number | null };
  projectorCpuUsPerEvent: number;
}

interface Tally {
  sent: { api: Map<string, number>; projector: Map<string, number> };
  inScripts: { api: number; projector: number };
  cpu: { api: number; projector: number; redis: number };
  appends: { api: number; projector: number };
  events: number;
  ms: number;
}

async function costs(
  layout: Layout,
  bundle: string[],
  upstreamUrl: string,
  rate: number,
  seconds: number,
  workspaces: number,
  redisProc: ChildProcess | null,
): Promise<Costs> {
  const c = await startCluster(layout, bundle, upstreamUrl, workspaces);
  const monitorRedis = new Redis(redisUrl);
  const caughtUp = async () => {
    for (let i = 0; i < 400 && (await sampleLag(c)).events.some((e) => e > 0); i++) await sleep(50);
  };
  try {
    await drive(c, rate, 2, 4); // warm-up
    await caughtUp();
    const redisPort = Number(new URL(redisUrl).port || 6379);
    const roleOf = new Map<number, 'api' | 'projector'>();
    for (const p of c.apis) for (const port of clientPortsOf(p.child.proc.pid!, redisPort)) roleOf.set(port, 'api');
    for (const p of c.projectors) for (const port of clientPortsOf(p.child.proc.pid!, redisPort)) roleOf.set(port, 'projector');
    const fresh = (): Tally => ({
      sent: { api: new Map(), projector: new Map() },
      inScripts: { api: 0, projector: 0 },
      cpu: { api: 0, projector: 0, redis: 0 },
      appends: { api: 0, projector: 0 },
      events: 0,
      ms: 0,
    });
    let tally = fresh();
    let lastScriptRole: 'api' | 'projector' | null = null;
    const monitor = await monitorRedis.monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      // Redis 7 shows a script's own commands right after its EVAL/EVALSHA line, as "lua".
      if (source === 'lua') {
        if (lastScriptRole) tally.inScripts[lastScriptRole]++;
        return;
      }
      const role = roleOf.get(Number(source.split(':').pop()));
      const cmd = (args[0] ?? '').toLowerCase();
      lastScriptRole = role && (cmd.startsWith('eval') || cmd.startsWith('fcall')) ? role : null;
      if (role) tally.sent[role].set(cmd, (tally.sent[role].get(cmd) ?? 0) + 1);
    });
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const pids = { api: c.apis.map((p) => p.child.proc.pid!), projector: c.projectors.map((p) => p.child.proc.pid!) };
    const snapshot = async () => ({
      cpu: { api: sum(pids.api.map(cpuMs)), projector: sum(pids.projector.map(cpuMs)), redis: redisProc ? cpuMs(redisProc.pid!) : 0 },
      appends: { api: sum(await Promise.all(c.apis.map(appendsOf))), projector: sum(await Promise.all(c.projectors.map(appendsOf))) },
      head: await c.store.headPosition(),
      t: Date.now(),
    });
    /** One window: what the cluster did during `work` (and the projectors' catching up after it). */
    const window = async (work: () => Promise<void>): Promise<Tally> => {
      tally = fresh();
      const a = await snapshot();
      await work();
      await caughtUp();
      const b = await snapshot();
      const t = tally;
      t.cpu = { api: b.cpu.api - a.cpu.api, projector: b.cpu.projector - a.cpu.projector, redis: b.cpu.redis - a.cpu.redis };
      t.appends = { api: b.appends.api - a.appends.api, projector: b.appends.projector - a.appends.projector };
      t.events = await eventsAfter(c.store, a.head, b.head);
      t.ms = b.t - a.t;
      return t;
    };
    // What the processes do with no requests (lease renewals, readiness polls, pub/sub, the
    // collectors' scrapes): measured first and subtracted, pro rata, from the loaded window.
    const idle = await window(() => sleep(seconds * 1000));
    let results: autocannon.Result[] = [];
    const loaded = await window(async () => void (results = await drive(c, rate, seconds, 16)));
    monitor.disconnect();
    // Every request sent is served (the window closes only after the projectors caught up), also
    // the few autocannon stopped waiting for at the end: their appends are in the window too.
    const requests = results.reduce((a, r) => a + r.requests.sent, 0);
    const k = loaded.ms / Math.max(1, idle.ms);
    const net = (load: number, base: number) => Math.max(0, load - k * base) / Math.max(1, requests);
    const total = (m: Map<string, number>) => sum([...m.values()]);
    const top = (role: 'api' | 'projector') =>
      [...loaded.sent[role]]
        .map(([cmd, n]) => [cmd, +net(n, idle.sent[role].get(cmd) ?? 0).toFixed(3)] as [string, number])
        .filter(([, v]) => v > 0)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8);
    const projectorCpu = net(loaded.cpu.projector, idle.cpu.projector) * requests;
    return {
      layout: layoutName(layout),
      rate,
      requests,
      appendsPerRequest: {
        api: net(loaded.appends.api, idle.appends.api),
        projector: net(loaded.appends.projector, idle.appends.projector),
      },
      eventsPerRequest: net(loaded.events, idle.events),
      redisPerRequest: {
        api: { sent: net(total(loaded.sent.api), total(idle.sent.api)), inScripts: net(loaded.inScripts.api, idle.inScripts.api) },
        projector: {
          sent: net(total(loaded.sent.projector), total(idle.sent.projector)),
          inScripts: net(loaded.inScripts.projector, idle.inScripts.projector),
        },
      },
      topApiCommands: top('api'),
      topProjectorCommands: top('projector'),
      cpuMsPerRequest: {
        api: net(loaded.cpu.api, idle.cpu.api),
        projector: net(loaded.cpu.projector, idle.cpu.projector),
        redis: redisProc ? net(loaded.cpu.redis, idle.cpu.redis) : null,
      },
      projectorCpuUsPerEvent: (1000 * projectorCpu) / Math.max(1, loaded.events - k * idle.events),
    };
  } finally {
    monitorRedis.disconnect();
    await stopCluster(c);
  }
}

// ---------------------------------------------------------------- report

interface Report {
  measured: string;
  machine: string;
  loadStart: number[];
  loadEnd: number[];
  options: Record<string, number | string>;
  layouts: Array<Omit<RoundResult, 'layout'> & { layout: string; rounds: number }>;
  rounds: RoundResult[];
  costs: Costs | null;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

function aggregate(layouts: Layout[], rounds: RoundResult[]): Report['layouts'] {
  return layouts.flatMap((l) => {
    const rs = rounds.filter((r) => r.layout === layoutName(l));
    if (!rs.length) return [];
    return [
      {
        layout: layoutName(l),
        rounds: rs.length,
        rps: mean(rs.map((r) => r.rps)),
        p50: mean(rs.map((r) => r.p50)),
        p99: mean(rs.map((r) => r.p99)),
        bad: rs.reduce((a, r) => a + r.bad, 0),
        // The worst round's lag: the claim is that lag stays bounded in every round.
        partitions: rs[0].partitions.map((_, p) => {
          const of = (k: keyof RoundResult['partitions'][number]) => Math.max(...rs.map((r) => r.partitions[p][k]));
          return {
            partition: p,
            lagP50s: of('lagP50s'),
            lagP99s: of('lagP99s'),
            lagMaxS: of('lagMaxS'),
            lagEndS: of('lagEndS'),
            lagEndEvents: of('lagEndEvents'),
            trendSps: of('trendSps'),
          };
        }),
        drainS: rs.some((r) => r.drainS === null) ? null : Math.max(...rs.map((r) => r.drainS!)),
        apiCpuMsPerRequest: mean(rs.map((r) => r.apiCpuMsPerRequest)),
        projectorCpuUsPerEvent: mean(rs.map((r) => r.projectorCpuUsPerEvent)),
        redisCpuMsPerRequest: rs[0].redisCpuMsPerRequest === null ? null : mean(rs.map((r) => r.redisCpuMsPerRequest!)),
        eventsPerRequest: mean(rs.map((r) => r.eventsPerRequest)),
        quotaSpent: rs[0].quotaSpent === null ? null : rs[0].quotaSpent.map((_, j) => mean(rs.map((r) => r.quotaSpent![j]))),
      },
    ];
  });
}

function table(r: Report): string {
  const f = (n: number, d = 2) => n.toFixed(d);
  const o = r.options;
  const lines = [
    `Measured ${r.measured} on ${r.machine}; load average (1/5/15 min) at the start ${r.loadStart.map((x) => f(x)).join(' / ')}, at the end ${r.loadEnd.map((x) => f(x)).join(' / ')}. ` +
      `PostgreSQL event store (a fresh database per round), one ${o.redis} Redis, instant upstream. ` +
      `Offered load ${o.rate} requests/s (autocannon overallRate, ${o.connections} connections per api), ${o.duration} s per round after 3 s of warm-up, ${o.rounds} alternating rounds per layout, ${o.workspaces} workspaces. ` +
      (Number(o.share) >= 1
        ? 'Projectors unthrottled. '
        : o.throttle === 'cgroup'
          ? `Every projector process throttled to a ${Number(o.share) * 100}% CPU share by a cgroup CPU quota of its own (${o.throttleWhy}; ${Number(o.share) * Number(o.periodMs)} ms of CPU per ${o.periodMs} ms period). `
          : `Every projector process throttled to a ${Number(o.share) * 100}% CPU share by signals (SIGCONT, then SIGSTOP after ${Number(o.share) * Number(o.periodMs)} ms of every ${o.periodMs} ms${Number(o.staggered) ? ', each projector in a window of its own' : ', every projector in the same window'}). `) +
      `Lag: every ${SAMPLE_MS} ms, per partition, the age of the oldest event its slowest projection has not applied; the worst round is shown; the lag at the end also in store positions (on PostgreSQL a transaction spans 65,536 of them, so they are not an event count). Latencies in ms.`,
    '',
    '| layout | requests/s | p50 | p99 | non-2xx + errors | partition | lag p50 s | lag p99 s | lag max s | lag at the end | lag trend (s per s, 2nd half) | caught up after the load | api CPU ms/request | projector CPU µs/event | Redis CPU ms/request | quota used up (% of periods, per projector) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const l of r.layouts) {
    l.partitions.forEach((p, i) => {
      const head = i === 0 ? `| ${l.layout} | ${Math.round(l.rps)} | ${f(l.p50, 1)} | ${f(l.p99, 1)} | ${l.bad}` : '| | | | |';
      const tail =
        i === 0
          ? `${l.drainS === null ? 'not within 20 s' : `${f(l.drainS, 1)} s`} | ${f(l.apiCpuMsPerRequest)} | ${Math.round(l.projectorCpuUsPerEvent)} | ${l.redisCpuMsPerRequest === null ? '—' : f(l.redisCpuMsPerRequest, 3)} | ${l.quotaSpent ? l.quotaSpent.map((q) => Math.round(q * 100)).join(', ') : '—'} |`
          : '| | | | |';
      lines.push(
        `${head} | ${p.partition} | ${f(p.lagP50s)} | ${f(p.lagP99s)} | ${f(p.lagMaxS)} | ${f(p.lagEndS)} s (${p.lagEndEvents} positions) | ${p.trendSps >= 0 ? '+' : ''}${f(p.trendSps, 3)} | ${tail}`,
      );
    });
  }
  if (r.costs) {
    const c = r.costs;
    lines.push(
      '',
      `Cost of one request (${c.layout}, unthrottled, ${c.rate} requests/s offered, ${c.requests} requests, Redis MONITOR on; what the same processes did in an idle window of the same length is subtracted):`,
      '',
      '| per request | api side | projector side |',
      '|---|---:|---:|',
      `| appends (successful, the processes' own metric) | ${f(c.appendsPerRequest.api)} | ${f(c.appendsPerRequest.projector)} |`,
      `| events (counted in the store) | ${f(c.eventsPerRequest)} | — |`,
      `| Redis commands sent | ${f(c.redisPerRequest.api.sent)} | ${f(c.redisPerRequest.projector.sent)} |`,
      `| Redis commands run inside scripts | ${f(c.redisPerRequest.api.inScripts)} | ${f(c.redisPerRequest.projector.inScripts)} |`,
      `| CPU ms (user + system) | ${f(c.cpuMsPerRequest.api, 3)} | ${f(c.cpuMsPerRequest.projector, 3)} (${Math.round(c.projectorCpuUsPerEvent)} µs per event) |`,
      ...(c.cpuMsPerRequest.redis !== null ? [`| Redis server CPU ms | ${f(c.cpuMsPerRequest.redis, 3)} (both sides) | |`] : []),
      '',
      `Commands sent per request, api: ${c.topApiCommands.map(([k, v]) => `${k} ${v}`).join(', ')}; projector: ${c.topProjectorCommands.map(([k, v]) => `${k} ${v}`).join(', ')}.`,
    );
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------- --redis-nodes: scaling and faults

interface NodeFigures {
  port: number;
  role: string;
  /** redis-server CPU (INFO cpu) and commands executed (INFO commandstats), per request served. */
  cpuMsPerRequest: number;
  callsPerRequest: number;
  /** Of the periods it ran in, the share in which it used its whole quota. */
  quotaSpent: number | null;
}

interface ScalingResult {
  redis: string;
  requests: number;
  /** 2xx per second over the loaded window (closed loop: what the capped Redis let through). */
  rps: number;
  p50: number;
  p99: number;
  bad: number;
  nodes: NodeFigures[];
  /** Every node's CPU (ms) and commands per request. */
  cpuMsPerRequest: number;
  callsPerRequest: number;
  /** The busiest primary's share of all primaries' CPU, and of their commands. */
  busiestCpuShare: number;
  busiestCallShare: number;
  /** Time for the projectors to apply everything after the load (null: not within 30 s). */
  drainS: number | null;
}

/** A fault run: what callers saw around the fault, and whether the money is whole afterwards. */
interface FaultResult {
  fault: string;
  requests: number;
  ok: number;
  /** Non-2xx answers by status, and the window from the first to the last 503 (s). */
  statuses: Record<string, number>;
  window503S: number | null;
  /** How long the fault itself took (failover to cluster_state:ok, or the reshard). */
  faultS: number;
  debited: number;
  doubled: number;
  /**
   * 2xx answers (x-request-id, warm-up included) with no debit in the store; debits of requests no
   * 2xx was seen for (those autocannon stopped waiting for at the end, up to its connections per
   * drive, and any answered with an error after their debit).
   */
  lost: number;
  debitedNot2xx: number;
  /** Requests in the store with no debit: answered with an error after admission, left to the sweeper. */
  open: number;
  /** `tollgate ledger verify`'s summary line (balances and ledger against a replay of the store). */
  verify: string;
  verified: boolean;
}

interface NodesOptions {
  primaries: number;
  replicas: number;
  share: number;
  periodMs: number;
  cgroup: CgroupCpu | null;
  connections: number;
  seconds: number;
  workspaces: number;
}

/** Starts the Redis of a --redis-nodes run; the bench stops it however it ends. */
async function startNodes(o: NodesOptions): Promise<BenchRedis> {
  benchRedis = await startBenchRedis(o.primaries, o.replicas);
  const redis = benchRedis;
  redisEnv = redis.env;
  redisClient = () => redis.client();
  return redis;
}

/**
 * Caps every redis-server alike, each in a cgroup of its own (released however the bench ends).
 * Applied once the processes have started and seeded their workspaces: seeding through a 1% Redis
 * would take minutes and measures nothing.
 */
function capNodes(redis: BenchRedis, o: NodesOptions): CgroupThrottle | null {
  if (o.share >= 1 || !o.cgroup) return null;
  const cap = new CgroupThrottle(o.cgroup, o.share, o.periodMs);
  throttles.add(() => cap.release());
  for (const n of redis.nodes) cap.add(n.pid);
  return cap;
}

async function stopNodes(cap: CgroupThrottle | null): Promise<void> {
  if (cap) cap.release();
  if (benchRedis) await benchRedis.stop();
  benchRedis = null;
}

async function drained(c: Cluster, ms: number): Promise<number | null> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    const s = await sampleLag(c).catch(() => null);
    if (s && s.events.every((e) => e === 0)) return (Date.now() - t0) / 1000;
    await sleep(200);
  }
  return null;
}

/** One scaling round: the layout over `o.primaries` capped primaries, closed-loop load, per-node figures. */
async function scalingRound(layout: Layout, bundle: string[], upstreamUrl: string, o: NodesOptions): Promise<ScalingResult> {
  const redis = await startNodes(o);
  const c = await startCluster(layout, bundle, upstreamUrl, o.workspaces);
  const cap = capNodes(redis, o);
  try {
    await drive(c, 0, 3, o.connections); // warm-up: JIT, pools, slots
    await drained(c, 30_000);
    const s0 = await nodeStats(redis.nodes);
    const q0 = cap?.stats() ?? null;
    const results = await drive(c, 0, o.seconds, o.connections);
    const drainS = await drained(c, 30_000);
    const s1 = await nodeStats(redis.nodes);
    const q1 = cap?.stats() ?? null;
    const d = statDelta(s0, s1);
    const ok = results.reduce((a, r) => a + r['2xx'], 0);
    const requests = results.reduce((a, r) => a + r.requests.total, 0);
    const per = (x: number) => x / Math.max(1, ok);
    const masters = d.filter((n) => n.role === 'master');
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    return {
      redis: `${o.primaries} primar${o.primaries > 1 ? 'ies' : 'y'}${o.replicas ? ` + ${o.replicas} replica each` : ''}`,
      requests,
      rps: ok / o.seconds,
      p50: Math.max(...results.map((r) => r.latency.p50)),
      p99: Math.max(...results.map((r) => r.latency.p99)),
      bad: requests - ok,
      nodes: d.map((n, i) => ({
        port: n.port,
        role: n.role,
        cpuMsPerRequest: per(n.cpuMs),
        callsPerRequest: per(n.calls),
        quotaSpent:
          q0 && q1 ? (q1[i].periods - q0[i].periods ? (q1[i].throttled - q0[i].throttled) / (q1[i].periods - q0[i].periods) : 0) : null,
      })),
      cpuMsPerRequest: per(sum(d.map((n) => n.cpuMs))),
      callsPerRequest: per(sum(d.map((n) => n.calls))),
      busiestCpuShare: Math.max(...masters.map((n) => n.cpuMs)) / Math.max(1e-9, sum(masters.map((n) => n.cpuMs))),
      busiestCallShare: Math.max(...masters.map((n) => n.calls)) / Math.max(1, sum(masters.map((n) => n.calls))),
      drainS,
    };
  } finally {
    await stopCluster(c);
    await stopNodes(cap);
  }
}

/** Runs `tollgate ledger verify` as the operator would (a child configured like the processes). */
async function ledgerVerify(bundle: string[], env: Record<string, string>): Promise<{ line: string; ok: boolean }> {
  const child = new Child(bundle, { ...env, BENCH_PART: 'verify' });
  owned.add(child.proc);
  const lines: string[] = [];
  child.onLine = (l) => lines.push(l);
  const { code } = await child.exited;
  owned.delete(child.proc);
  const line = lines.find((l) => l.startsWith('verified ')) ?? `no summary (exit ${code}): ${child.stderr.trim().slice(-300)}`;
  return {
    // The summary and the first difference: a table cell, not the whole list.
    line: [line, ...lines.filter((l) => l.startsWith('  ')).slice(0, 1)].join('; first: '),
    ok: code === 0 && lines.some((l) => / 0 differences$/.test(l)),
  };
}

/** Every debit in the store, by request: how many requests were debited once, twice, or opened and never debited. */
async function debits(store: PostgresEventStore): Promise<{ debited: number; doubled: number; open: number; ids: Set<string> }> {
  const byRequest = new Map<string, number>();
  const opened = new Set<string>();
  for (let at = 0n; ;) {
    const page = (await store.readAll({ fromPosition: at, maxCount: 5000 })).filter((e) => e.position > at);
    if (!page.length) break;
    for (const e of page) {
      const id = (e.data as { requestId?: string }).requestId;
      if (!id) continue;
      if (e.type === 'InferenceRequested') opened.add(id);
      if (e.type === 'TokensDebited') byRequest.set(id, (byRequest.get(id) ?? 0) + 1);
    }
    at = page[page.length - 1].position;
  }
  return {
    debited: byRequest.size,
    doubled: [...byRequest.values()].filter((n) => n > 1).length,
    open: [...opened].filter((id) => !byRequest.has(id)).length,
    ids: new Set(byRequest.keys()),
  };
}

/** A fault under open-loop load: `fault` runs a third of the way in; then drain, count debits, verify. */
async function faultRound(
  name: string,
  fault: (redis: BenchRedis) => Promise<void>,
  layout: Layout,
  bundle: string[],
  upstreamUrl: string,
  rate: number,
  o: NodesOptions,
): Promise<FaultResult> {
  const redis = await startNodes(o);
  const c = await startCluster(layout, bundle, upstreamUrl, o.workspaces);
  const cap = capNodes(redis, o);
  try {
    // Every 2xx since the seeding, the warm-up's too: each must have exactly one debit in the store.
    const answered = new Set<string>();
    const warm = await drive(c, rate, 3, o.connections, (status, id) => void (status >= 200 && status < 300 && id && answered.add(id)));
    const t0 = Date.now();
    const times503: number[] = [];
    const statuses: Record<string, number> = {};
    let faultS = 0;
    const faulted = sleep((o.seconds * 1000) / 3).then(async () => {
      const f0 = Date.now();
      await fault(redis);
      faultS = (Date.now() - f0) / 1000;
    });
    const results = await drive(c, rate, o.seconds, o.connections, (status, id) => {
      if (status >= 200 && status < 300) return void (id && answered.add(id));
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status === 503) times503.push(Date.now() - t0);
    });
    await faulted;
    await drained(c, 60_000);
    const ok = results.reduce((a, r) => a + r['2xx'], 0);
    void warm;
    const d = await debits(c.store);
    const v = await ledgerVerify(bundle, {
      ...redisEnv,
      REDIS_PREFIX: c.prefix,
      EVENT_STORE: 'postgres',
      DATABASE_URL: c.db.url,
      PROJECTION_PARTITIONS: String(layout.partitions),
      LOG_LEVEL: 'error',
    });
    const errors = results.reduce((a, r) => a + r.errors + r.timeouts, 0);
    if (errors) statuses['errors/timeouts'] = errors;
    return {
      fault: name,
      requests: results.reduce((a, r) => a + r.requests.total, 0),
      ok,
      statuses,
      window503S: times503.length ? (times503[times503.length - 1] - times503[0]) / 1000 : null,
      faultS,
      debited: d.debited,
      doubled: d.doubled,
      open: d.open,
      lost: [...answered].filter((id) => !d.ids.has(id)).length,
      debitedNot2xx: [...d.ids].filter((id) => !answered.has(id)).length,
      verify: v.line,
      verified: v.ok,
    };
  } finally {
    await stopCluster(c);
    await stopNodes(cap);
  }
}

/** SIGKILL the primary serving the most slots; resolves once the cluster is ok again (its replica took over). */
async function killPrimary(redis: BenchRedis): Promise<void> {
  const [victim] = (await primaries(redis.nodes)).sort((a, b) => b.slots - a.slots);
  const node = redis.nodes.find((n) => n.port === victim.port)!;
  process.kill(node.pid, 'SIGKILL');
  await failedOver(redis.nodes, node.port, 60_000);
}

/** `redis-cli --cluster reshard` of 1,000 slots from the first primary to the second, under load. */
async function reshard1000(redis: BenchRedis): Promise<void> {
  const ps = await primaries(redis.nodes);
  await reshard(ps[0].port, ps[0].id, ps[1].id, 1000);
}

function nodesTable(
  machine: string,
  loadStart: number[],
  o: NodesOptions & { throttleWhy: string; rate: number },
  rs: ScalingResult[],
  fs: FaultResult[],
): string {
  const f = (n: number, d = 2) => n.toFixed(d);
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${machine}; load average at the start ${loadStart.map((x) => f(x)).join(' / ')}, at the end ${loadavg()
      .map((x) => f(x))
      .join(' / ')}. ` +
      `PostgreSQL event store (a fresh database per round), instant upstream, ${o.workspaces} workspaces, projectors unthrottled. ` +
      (o.share < 1 && o.cgroup
        ? `Every redis-server in a cgroup of its own with a ${o.share * 100}% CPU quota (${o.throttleWhy}; ${f(o.share * o.periodMs, 1)} ms per ${o.periodMs} ms). `
        : 'redis-servers not capped. ') +
      `Closed loop: ${o.connections} connections per api, ${o.seconds} s after 3 s of warm-up. Redis figures from each node's INFO cpu and INFO commandstats, from the start of the load to the projectors' catching up, per 2xx request.`,
    '',
    '| Redis | requests/s (2xx) | p50 ms | p99 ms | non-2xx + errors | Redis CPU ms/request, all nodes | commands/request, all nodes | busiest primary: CPU share / command share | per node: CPU ms/request, commands/request, quota used up | caught up after |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|---:|',
  ];
  for (const r of rs)
    lines.push(
      `| ${r.redis} | ${f(r.rps, 1)} | ${f(r.p50, 1)} | ${f(r.p99, 1)} | ${r.bad} | ${f(r.cpuMsPerRequest, 3)} | ${f(r.callsPerRequest, 1)} | ${pct(r.busiestCpuShare)} / ${pct(r.busiestCallShare)} | ` +
        `${r.nodes.map((n) => `${n.port} (${n.role}): ${f(n.cpuMsPerRequest, 3)}, ${f(n.callsPerRequest, 1)}${n.quotaSpent === null ? '' : `, ${pct(n.quotaSpent)}`}`).join('; ')} | ${r.drainS === null ? 'not within 30 s' : `${f(r.drainS, 1)} s`} |`,
    );
  if (fs.length) {
    lines.push(
      '',
      `Faults under open-loop load (${o.rate} requests/s offered), the fault a third of the way into ${o.seconds} s:`,
      '',
      '| fault | took | requests | 2xx | non-2xx by status | 503 window | debited (warm-up included) | doubled | lost (2xx, no debit) | debited, no 2xx seen | opened, not debited | ledger verify |',
      '|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|',
    );
    for (const r of fs)
      lines.push(
        `| ${r.fault} | ${f(r.faultS, 1)} s | ${r.requests} | ${r.ok} | ${
          Object.entries(r.statuses)
            .map(([k, v]) => `${k}: ${v}`)
            .join(', ') || 'none'
        } | ${r.window503S === null ? 'none' : `${f(r.window503S, 1)} s`} | ${r.debited} | ${r.doubled} | ${r.lost} | ${r.debitedNot2xx} | ${r.open} | ${r.verified ? 'clean' : 'NOT clean'}: ${r.verify} |`,
      );
  }
  return lines.join('\n');
}

/**
 * --redis-nodes 1|3 [--redis-replicas 0|1] [--redis-share <0..1> (0.01)] [--faults kill,reshard,none]
 * (default with replicas: kill,reshard; `none` is the same accounting with no fault, on any Redis).
 */
async function redisNodesMode(bundle: string[], upstreamUrl: string): Promise<string> {
  const primariesN = numberArg('redis-nodes', 1);
  const replicas = numberArg('redis-replicas', 0);
  if (![1, 3].includes(primariesN) || ![0, 1].includes(replicas)) throw new Error('--redis-nodes must be 1 or 3, --redis-replicas 0 or 1');
  const share = numberArg('redis-share', 0.01);
  const cg = chooseThrottle(stringArg('throttle', 'auto'));
  if (share < 1 && cg.throttle !== 'cgroup') throw new Error(`--redis-share needs the cgroup throttle: ${cg.why}`);
  const o: NodesOptions = {
    primaries: primariesN,
    replicas,
    share,
    periodMs: numberArg('period-ms', defaultPeriodMs(share)),
    cgroup: cg.cgroup,
    connections: numberArg('connections', 8),
    seconds: numberArg('duration', 15),
    workspaces: numberArg('workspaces', 64),
  };
  if (share < 1) cfsQuota(share, o.periodMs);
  // One partition by default: \`tollgate ledger verify\` compares at the unpartitioned checkpoint and
  // reads 0 (every workspace differs) when PROJECTION_PARTITIONS > 1.
  const layout = parseLayouts(stringArg('layouts', '2x1x1'))[0];
  spread = layout.partitions;
  const rate = numberArg('rate', 30);
  const faults = stringArg('faults', replicas ? 'kill,reshard' : '')
    .split(',')
    .filter(Boolean);
  if (faults.some((f) => f !== 'none') && (primariesN < 3 || !replicas))
    throw new Error('--faults kill and reshard need --redis-nodes 3 --redis-replicas 1');
  const log = (s: string) => process.stderr.write(`${s}\n`);
  const loadStart = loadavg();
  const rs: ScalingResult[] = [];
  for (let r = 0; r < numberArg('rounds', 1); r++) {
    log(`round ${r + 1}: ${layoutName(layout)} over ${primariesN} Redis node(s), each capped at ${share * 100}% …`);
    const res = await scalingRound(layout, bundle, upstreamUrl, o);
    log(
      `  ${res.rps.toFixed(1)} requests/s, Redis ${res.cpuMsPerRequest.toFixed(3)} ms CPU and ${res.callsPerRequest.toFixed(1)} commands per request, busiest primary ${Math.round(res.busiestCpuShare * 100)}% of the CPU`,
    );
    rs.push(res);
  }
  const fs: FaultResult[] = [];
  for (const name of faults) {
    const fault = name === 'kill' ? killPrimary : name === 'reshard' ? reshard1000 : name === 'none' ? async () => undefined : null;
    if (!fault) throw new Error(`--faults: unknown fault "${name}" (kill, reshard, none)`);
    log(`fault run: ${name} at ${rate} requests/s …`);
    const res = await faultRound(
      ({ kill: 'SIGKILL a primary', reshard: 'reshard 1,000 slots' } as Record<string, string>)[name] ?? 'none (the control)',
      fault,
      layout,
      bundle,
      upstreamUrl,
      rate,
      o,
    );
    log(`  ${JSON.stringify(res)}`);
    fs.push(res);
  }
  const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, Node ${process.version}`;
  return nodesTable(machine, loadStart, { ...o, throttleWhy: cg.why, rate }, rs, fs);
}

async function main(): Promise<void> {
  if (process.argv.includes('--redis-nodes')) {
    const bundle = bundleChild(join(__dirname, 'cluster-role.ts'));
    try {
      const upstream = await launch(bundle.args, { BENCH_PART: 'upstream' });
      const text = await redisNodesMode(bundle.args, `http://127.0.0.1:${upstream.port}/v1`);
      process.stdout.write(`${text}\n`);
      if (process.argv.includes('--write'))
        replaceDocSection(
          'Redis nodes, last run',
          `\`npm run bench:cluster -- ${process.argv
            .slice(2)
            .filter((a) => a !== '--write')
            .join(' ')}\` (test/bench/cluster.bench.ts).\n\n${text}\n`,
        );
    } finally {
      await cleanUp();
      bundle.dispose();
    }
    return;
  }
  const layouts = parseLayouts(stringArg('layouts', '2x1x1,2x2x2'));
  spread = Math.max(...layouts.map((l) => l.partitions));
  const o = {
    rate: numberArg('rate', 30),
    seconds: numberArg('duration', 20),
    rounds: numberArg('rounds', 2),
    connections: numberArg('connections', 16),
    workspaces: numberArg('workspaces', 32),
    share: numberArg('projector-share', 0.1),
    staggered: process.argv.includes('--staggered'),
    costRate: numberArg('cost-rate', 30),
    costSeconds: numberArg('cost-seconds', 8),
  };
  if (!(o.share > 0 && o.share <= 1)) throw new Error('--projector-share must be in (0, 1]');
  const json = process.argv.includes('--json');
  const log = (s: string) => process.stderr.write(`${s}\n`);
  const chosen = chooseThrottle(stringArg('throttle', 'auto'));
  const periodMs = numberArg('period-ms', chosen.throttle === 'cgroup' ? defaultPeriodMs(o.share) : 200);
  if (chosen.throttle === 'cgroup' && o.share < 1) cfsQuota(o.share, periodMs); // a share the kernel refuses fails here, before any round
  const held: ThrottleOptions = { throttle: chosen.throttle, cgroup: chosen.cgroup, share: o.share, periodMs, staggered: o.staggered };
  log(
    o.share >= 1
      ? 'projectors unthrottled (--projector-share 1)'
      : chosen.throttle === 'cgroup'
        ? `throttle: cgroup CPU quota (${chosen.why}), ${o.share * 100}% = ${o.share * periodMs} ms of CPU per ${periodMs} ms period, one cgroup per projector`
        : `throttle: signals (${chosen.why}), SIGCONT then SIGSTOP after ${o.share * periodMs} ms of every ${periodMs} ms${o.staggered ? ', staggered' : ''}`,
  );
  const loadStart = loadavg();
  const given = stringArg('redis-url', '');
  if (given) redisUrl = given;
  else ({ url: redisUrl, proc: redisServer } = await privateRedis());
  const redisProc = redisServer;
  const child = bundleChild(join(__dirname, 'cluster-role.ts'));
  try {
    const upstream = await launch(child.args, { BENCH_PART: 'upstream' });
    const upstreamUrl = `http://127.0.0.1:${upstream.port}/v1`;
    const rounds: RoundResult[] = [];
    for (let r = 0; r < o.rounds; r++) {
      for (const l of layouts) {
        log(`round ${r + 1}/${o.rounds}: ${layoutName(l)} at ${o.rate} requests/s …`);
        const res = await round(l, child.args, upstreamUrl, { ...o, ...held });
        log(
          `  ${Math.round(res.rps)} requests/s (${res.bad} non-2xx or errors), p99 ${res.p99} ms, api ${res.apiCpuMsPerRequest.toFixed(2)} ms CPU/request; ` +
            `lag p50/p99 per partition ${res.partitions.map((p) => `${p.lagP50s.toFixed(2)}/${p.lagP99s.toFixed(2)} s (trend ${p.trendSps.toFixed(3)})`).join(', ')}; ` +
            `caught up ${res.drainS === null ? 'not within 20 s' : `after ${res.drainS.toFixed(1)} s`}; projector ${Math.round(res.projectorCpuUsPerEvent)} µs CPU/event` +
            (res.quotaSpent ? `; quota used up in ${res.quotaSpent.map((q) => `${Math.round(q * 100)}%`).join(', ')} of periods` : ''),
        );
        rounds.push(res);
      }
    }
    let costResult: Costs | null = null;
    if (o.costSeconds > 0) {
      log(`cost phase: ${layoutName(layouts[0])}, unthrottled, ${o.costRate} requests/s, Redis MONITOR on …`);
      costResult = await costs(layouts[0], child.args, upstreamUrl, o.costRate, o.costSeconds, o.workspaces, redisProc);
    }
    await stopProcess(upstream.child.proc);
    const report: Report = {
      measured: `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      machine: `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, Node ${process.version}`,
      loadStart,
      loadEnd: loadavg(),
      options: {
        ...o,
        throttle: chosen.throttle,
        throttleWhy: chosen.why,
        periodMs,
        duration: o.seconds,
        staggered: o.staggered ? 1 : 0,
        layouts: layouts.map((l) => `${l.apis}x${l.projectors}x${l.partitions}`).join(','),
        redis: redisProc ? 'private (redis-server started by the bench)' : 'shared',
      },
      layouts: aggregate(layouts, rounds),
      rounds,
      costs: costResult,
    };
    const text = table(report);
    process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : `${text}\n`);
    if (process.argv.includes('--write'))
      replaceDocSection('Cluster, last run', `\`npm run bench:cluster\` (test/bench/cluster.bench.ts).\n\n${text}\n`);
  } finally {
    await cleanUp();
    child.dispose();
  }
}

main().catch(async (err) => {
  process.stderr.write(`cluster bench failed: ${(err as Error).stack ?? err}\n`);
  await cleanUp();
  process.exit(1);
});
