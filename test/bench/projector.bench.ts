/**
 * bench:projector — how fast one projector process applies real traffic with every projection.
 *
 * Fills a fresh SQLite file and a fresh PostgreSQL database (BENCH_DATABASE_URL or TEST_DATABASE_URL,
 * default postgres://postgres@127.0.0.1:5432/postgres; a database of its own, dropped afterwards)
 * with traffic shaped like a live service (./projector-traffic.ts), then replays it from position 0
 * through the real ProjectionRunner and every projection of src/main.ts into a fresh Redis prefix,
 * each round in a child process (./projector-replay.ts): events/s, and CPU µs per event of the
 * projector process. Then each projection alone (events/s over the same history).
 *
 * With --baseline <tree> (a checkout of an older commit, with node_modules), rounds alternate
 * between that tree and this one over the same history, so both columns see the same machine load.
 * Over PostgreSQL each tree reads a database of its own, created by its own code (a tree refuses an
 * event schema newer than it knows), holding the same rows.
 *
 * Also the Redis server's CPU per event (INFO cpu around each round): the projector's alone only
 * when REDIS_URL points at a private redis-server (e.g. `redis-server --port 6393 --save ''`).
 *
 *   npm run bench:projector -- [--events 200000] [--rounds 3] [--stores sqlite,postgres] [--baseline dir] [--no-each]
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { openEventStore } from '../../src/init';
import { cleanupPrefix, uniquePrefix } from '../support/redis';
import { withDatabase } from '../support/postgres';
import { fillPostgresRaw, fillTraffic } from './projector-traffic';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const EVENTS = Number(arg('events', '200000'));
const ROUNDS = Number(arg('rounds', '3'));
const STORES = arg('stores', 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>;
const BASELINE = process.argv.includes('--baseline') ? resolve(arg('baseline', '')) : null;
const EACH = !process.argv.includes('--no-each');
const HERE = resolve(__dirname, '../..');
const ADMIN_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

interface Round {
  events: number;
  ms: number;
  eventsPerSecond: number;
  cpuUsPerEvent: number;
  /** The Redis server's CPU per event over the round (used_cpu_user + used_cpu_sys): its own only on a private redis-server. */
  redisCpuUsPerEvent: number;
}

/** The Redis server's CPU seconds so far (INFO cpu). */
async function redisCpuSeconds(): Promise<number> {
  const r = new Redis(REDIS_URL);
  try {
    const info = await r.info('cpu');
    const num = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return num('used_cpu_user') + num('used_cpu_sys');
  } finally {
    r.disconnect();
  }
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function admin(sql: string) {
  const c = new Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function replay(root: string, env: Record<string, string>): Promise<Round> {
  const redis0 = await redisCpuSeconds();
  const res = await replayOnly(root, env);
  return { ...res, redisCpuUsPerEvent: (((await redisCpuSeconds()) - redis0) * 1e6) / res.events };
}

function replayOnly(root: string, env: Record<string, string>): Promise<Omit<Round, 'redisCpuUsPerEvent'>> {
  const prefix = uniquePrefix('bench-projector');
  return new Promise<Omit<Round, 'redisCpuUsPerEvent'>>((ok, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(HERE, 'test/bench/projector-replay.ts')], {
      cwd: root,
      env: { ...process.env, ...env, ROOT: root, REDIS_PREFIX: prefix, REDIS_URL, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.on('exit', (code) => (code === 0 ? ok(JSON.parse(out.trim().split('\n').pop()!)) : fail(new Error(`replay exited ${code}`))));
  }).finally(() => cleanupPrefix(REDIS_URL, prefix));
}

async function main() {
  const cpu = cpus();
  console.log(`bench:projector — ${EVENTS} events, ${ROUNDS} rounds, stores ${STORES.join(', ')}`);
  console.log(`machine: nproc ${cpu.length}, ${cpu[0]?.model}, Node ${process.version}; load average ${load()}`);
  if (BASELINE)
    console.log(
      `baseline tree: ${BASELINE} (${execFileSync('git', ['-C', HERE, 'rev-parse', '--short', 'HEAD']).toString().trim()} is this one)`,
    );
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-projector-'));
  const dbName = `tollgate_bench_projector_${process.pid}`;
  const dbUrl = withDatabase(ADMIN_URL, dbName);
  // With a baseline, its rounds read a PostgreSQL database of their own, migrated by its own code: a
  // tree refuses a schema newer than it knows, and this tree would migrate an older one up.
  const baseDbName = `${dbName}_baseline`;
  const baseDbUrl = withDatabase(ADMIN_URL, baseDbName);
  const envs: Record<string, Record<string, string>> = {
    sqlite: { EVENT_STORE: 'sqlite', DATA_DIR: dataDir },
    postgres: { EVENT_STORE: 'postgres', DATABASE_URL: dbUrl, DATA_DIR: dataDir },
  };
  const pgDatabases = STORES.includes('postgres') ? [[dbName, dbUrl, HERE], ...(BASELINE ? [[baseDbName, baseDbUrl, BASELINE]] : [])] : [];
  try {
    for (const [name] of pgDatabases) {
      await admin(`CREATE DATABASE ${name}`);
      // The fill is not what is measured: commits need not wait for the WAL flush (reads are unchanged).
      await admin(`ALTER DATABASE ${name} SET synchronous_commit = off`);
    }
    const filled: Record<string, number> = {};
    for (const kind of STORES) {
      const t0 = performance.now();
      let n = 0;
      if (kind === 'postgres') {
        for (const [, url, root] of pgDatabases) {
          await migrateWith(root, url);
          // The replay divides by this count: PostgreSQL positions (schema version 3 on) are not event counts.
          const c = new Client({ connectionString: url });
          await c.connect();
          n = await fillPostgresRaw(c, EVENTS).finally(() => c.end());
        }
      } else {
        const store = openEventStore({ EVENT_STORE: kind, DATA_DIR: dataDir });
        await store.ping();
        n = await fillTraffic(store, EVENTS, 64);
        await store.close();
      }
      console.log(
        `${kind}: filled ${fmt(n)} events in ${fmt(performance.now() - t0)} ms${kind === 'postgres' && BASELINE ? ' (a database per tree)' : ''}`,
      );
      filled[kind] = n;
    }
    for (const kind of STORES) {
      const trees = BASELINE
        ? [
            ['before', BASELINE],
            ['after', HERE],
          ]
        : [['this tree', HERE]];
      const rounds = new Map<string, Round[]>(trees.map(([label]) => [label, []]));
      for (let r = 0; r < ROUNDS; r++) {
        // Alternate which tree goes first, so neither always gets the warmer cache.
        const order = r % 2 === 0 ? trees : [...trees].reverse();
        for (const [label, root] of order) {
          const env = kind === 'postgres' && root === BASELINE ? { ...envs[kind], DATABASE_URL: baseDbUrl } : envs[kind];
          const res = await replay(root, { ...env, EVENTS: String(filled[kind]) });
          rounds.get(label)!.push(res);
          console.log(
            `  ${kind} round ${r + 1} ${label}: ${fmt(res.eventsPerSecond)} events/s, ${res.cpuUsPerEvent.toFixed(1)} µs CPU/event, Redis ${res.redisCpuUsPerEvent.toFixed(1)} µs CPU/event, load ${load()}`,
          );
        }
      }
      console.log(`\n${kind}, all projections, one process (median of ${ROUNDS}):`);
      console.log('| tree | events/s | CPU µs/event (projector) | CPU µs/event (Redis) | rounds (events/s) |\n|---|---:|---:|---:|---|');
      for (const [label] of trees) {
        const rs = rounds.get(label)!;
        const eps = rs.map((x) => x.eventsPerSecond);
        const cpu = (f: (x: Round) => number) => median(rs.map(f)).toFixed(1);
        console.log(
          `| ${label} | ${fmt(median(eps))} | ${cpu((x) => x.cpuUsPerEvent)} | ${cpu((x) => x.redisCpuUsPerEvent)} | ${eps.map(fmt).join(', ')} |`,
        );
      }
      if (BASELINE) {
        const ratio =
          median(rounds.get('after')!.map((x) => x.eventsPerSecond)) / median(rounds.get('before')!.map((x) => x.eventsPerSecond));
        console.log(`after/before: ${ratio.toFixed(2)}×`);
      }
      if (EACH) {
        const names = listProjections();
        console.log(`\n${kind}, each projection alone (this tree, one round):`);
        console.log('| projection | events/s | CPU µs/event |\n|---|---:|---:|');
        for (const name of names) {
          const res = await replay(HERE, { ...envs[kind], ONLY: name });
          console.log(`| ${name} | ${fmt(res.eventsPerSecond)} | ${res.cpuUsPerEvent.toFixed(1)} |`);
        }
      }
      console.log(`load average after ${kind}: ${load()}\n`);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    for (const [name] of pgDatabases) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
  }
}

/** Creates the event schema in the PostgreSQL database at `url` with the code of the tree at `root`. */
function migrateWith(root: string, url: string): Promise<void> {
  const code = `require(${JSON.stringify(join(root, 'src/init'))}).openEventStore({ EVENT_STORE: 'postgres', DATABASE_URL: ${JSON.stringify(url)} }).ping().then(() => process.exit(0), (e) => (console.error(e), process.exit(1)))`;
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', code], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', (c) => (c === 0 ? ok() : fail(new Error(`migrating ${url} with ${root} exited ${c}`))));
  });
}

/** The projection names of this tree, in the runner's order. */
function listProjections(): string[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: loads the modules of the tree under test only when asked
  const { modules } = require('../../src/modules') as typeof import('../../src/modules');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: loads the modules of the tree under test only when asked
  const { projectionsOf } = require('../../src/services') as typeof import('../../src/services');
  const fake = {} as Parameters<typeof projectionsOf>[0];
  return projectionsOf(fake, modules).map((p) => p.name);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
