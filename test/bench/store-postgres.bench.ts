/**
 * The PostgreSQL column of bench:store (test/bench/store.bench.ts calls `benchPostgres`; alone:
 * npx tsx test/bench/store-postgres.bench.ts). In a database of its own on BENCH_DATABASE_URL or
 * TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres), dropped afterwards:
 *  (a) raw single-row INSERT (autocommit) vs PostgresEventStore.append of one event;
 *  (b) raw 10-row INSERT vs append of 10 events;
 *  (a2) 50 concurrent writers x 40 single-event appends: raw inserts over a pool of 10 (no commit-order
 *      guarantee) vs the adapter with group commit, and without: this store against schema version
 *      3's append path and the old append lock (./postgres-older-appends.ts), in rotating rounds,
 *      with the CPU per append of this process and of the server processes;
 *  (a3) how long a live subscriber (another store) waits for each of those appends, lock-free;
 *  (c) readAll of n events in batches of 5,000 vs raw SELECT of the same rows, and a projection
 *      rebuild (rebuild.bench.ts's balance-like projection) from PostgreSQL into Redis.
 * Raw writes use the adapter's table (same indexes; positions from a sequence of their own, below the
 * adapter's); they skip the revision check, the idempotency lookups and any commit-order guarantee,
 * so adapter/raw is the price of those.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { Client, Pool } from 'pg';
import type { NewEvent } from '../../src/platform/eventstore/port';
import { PostgresEventStore, PostgresOptions } from '../../src/platform/eventstore/postgres';
import { Keyspace } from '../../src/platform/projections/keyspace';
import { rebuildProjection } from '../../src/platform/projections/rebuild';
import { cleanupPrefix } from '../support/redis';
import { event } from './bench-events';
import { OlderAppendStore } from './postgres-older-appends';
import { benchBalances } from './rebuild.bench';

export interface PostgresBenchOptions {
  rounds: number;
  singlePerRound: number;
  batchesPerRound: number;
  roundCapMs: number;
  events: number;
  rebuild: boolean;
  /** Only (a2)/(a3), the concurrent writers (`--concurrent-only`). */
  concurrentOnly?: boolean;
  /** Batches in flight per lock-free store in (a2) (`--in-flight N`; default: the adapter's). */
  inFlight?: number;
  say: (line: string) => void;
}

const READ_BATCH = 5_000;
const FILL_BATCH = 10_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => performance.now();
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const range = (xs: number[]) => `${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}`;

const INSERT_COLUMNS = '(position, event_id, stream_id, stream_revision, type, data, metadata, created)';
/** Raw inserts take positions from this sequence, downwards from -1: never one the adapter writes. */
const RAW_SEQUENCE = 'CREATE SEQUENCE IF NOT EXISTS bench_raw_position INCREMENT -1 START -1';

/** One multi-row INSERT (its own transaction), the way a store with no rules at all would write. */
function rawInsert(pool: Pool, stream: string, first: number, events: NewEvent[]) {
  const values: unknown[] = [];
  const rows = events.map((e, i) => {
    values.push(e.id, stream, first + i, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata ?? {}));
    const b = i * 6;
    return `(nextval('bench_raw_position'), $${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, now())`;
  });
  return pool.query(`INSERT INTO tollgate_events ${INSERT_COLUMNS} VALUES ${rows.join(', ')}`, values);
}

async function writeBench(url: string, o: PostgresBenchOptions, perTx: number, txPerRound: number) {
  const pool = new Pool({ connectionString: url, max: 1 });
  // The database is dropped WITH (FORCE) at the end; a client still closing then must not crash the bench.
  pool.on('error', () => undefined);
  const store = new PostgresEventStore({ connectionString: url });
  const raw: number[] = [];
  const adapter: number[] = [];
  try {
    for (let round = 0; round < o.rounds; round++) {
      let t = now();
      let b = 0;
      for (; b < txPerRound && (b < 20 || now() < t + o.roundCapMs); b++) {
        await rawInsert(
          pool,
          `raw-${perTx}-${round}`,
          b * perTx,
          Array.from({ length: perTx }, (_, i) => event(b * perTx + i)),
        );
      }
      raw.push((b * 1000) / (now() - t));
      t = now();
      let expected: bigint | 'no_stream' = 'no_stream';
      for (b = 0; b < txPerRound && (b < 20 || now() < t + o.roundCapMs); b++) {
        const events = Array.from({ length: perTx }, (_, i) => event(b * perTx + i));
        expected = (await store.append(`adapter-${perTx}-${round}`, events, { expectedRevision: expected })).nextExpectedRevision;
      }
      adapter.push((b * 1000) / (now() - t));
    }
  } finally {
    await pool.end();
    await store.close();
  }
  return {
    raw: median(raw),
    adapter: median(adapter),
    ratio: median(raw.map((r, i) => adapter[i] / r)),
    rawRange: range(raw),
    adapterRange: range(adapter),
  };
}

/**
 * The append paths (a2) compares, in one run: 'locked' = before schema version 3 (decide outside the
 * lock, then the advisory lock, one INSERT, COMMIT; one batch in flight); 'version3' = schema version
 * 3's lock-free store as it was (each append decided by a function call of its own, everything queued
 * sent as one batch, up to 4 in flight); 'now' = this store (decisions together, what is queued shared
 * among the free batch slots).
 */
const VARIANT_NAMES = ['locked', 'version3', 'now'] as const;
type Variant = (typeof VARIANT_NAMES)[number];
const storeOf = (variant: Variant, opts: PostgresOptions): PostgresEventStore =>
  variant === 'now' ? new PostgresEventStore(opts) : new OlderAppendStore({ ...opts, append: variant });
interface RoundFigures {
  rate: number;
  /** This process's CPU per append (the stores and the writers). */
  nodeUs: number;
  /** The CPU per append of every server process of the database (read from /proc; 0 where the server is not local). */
  serverUs: number;
}

/** CPU time (ms) of each server process connected to the database at `url`, from /proc (same machine only). */
async function serverCpuMs(url: string): Promise<Map<number, number>> {
  const c = new Client({ connectionString: url });
  await c.connect();
  const out = new Map<number, number>();
  try {
    const { rows } = await c.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    for (const { pid } of rows) {
      try {
        const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        out.set(pid, (Number(f[11]) + Number(f[12])) * (1000 / CLOCK_TICKS));
      } catch {
        // Not on this machine, or already gone.
      }
    }
  } finally {
    await c.end();
  }
  return out;
}
/** Linux's USER_HZ. */
const CLOCK_TICKS = 100;

/**
 * 50 writers of single-event appends, each to a stream of its own: raw inserts over a pool of 10, then
 * the adapter over `processes` stores (each its own pool and group-commit queue, as separate api
 * processes would be), each of VARIANT_NAMES once per round in rotating order. Then one more 1-store round
 * of this store times a live subscriber on a store of its own: from each append's resolve to the
 * moment the subscriber yields it. Medians over the rounds.
 */
async function concurrentBench(url: string, writers: number, perWriter: number, rounds = 3, inFlight?: number) {
  const total = writers * perWriter;
  const pool = new Pool({ connectionString: url, max: 10 });
  let t = now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; i < perWriter; i++) await rawInsert(pool, `raw-c-${w}`, i, [event(i)]);
    }),
  );
  const raw = (total * 1000) / (now() - t);
  await pool.end();
  let run = 0;
  const lags: number[] = [];
  const runAdapter = async (groupCommit: boolean, variant: Variant, processes: number, watch = false): Promise<RoundFigures> => {
    const stores = Array.from({ length: processes }, () =>
      storeOf(variant, { connectionString: url, groupCommit, poolSize: 4, maxBatchesInFlight: inFlight }),
    );
    // Every pooled connection opened before the clock starts, so the server CPU below is the appends'.
    await Promise.all(stores.flatMap((s) => [s.ping(), s.ping(), s.ping(), s.ping()]));
    run++;
    const resolved = new Map<string, number>();
    const seen = new Map<string, number>();
    let sub: { close(): Promise<void> } | null = null;
    let reading: Promise<void> = Promise.resolve();
    const reader = watch ? new PostgresEventStore({ connectionString: url, pollIntervalMs: 250 }) : null;
    if (reader) {
      const s = reader.subscribeToAll({ after: await reader.headPosition() });
      sub = s;
      reading = (async () => {
        for await (const e of s) {
          seen.set(e.id, now());
          if (seen.size === total) return;
        }
      })();
    }
    const server0 = await serverCpuMs(url);
    const cpu0 = process.cpuUsage();
    t = now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const store = stores[w % processes];
        let expected: bigint | 'no_stream' = 'no_stream';
        for (let i = 0; i < perWriter; i++) {
          const e = event(i);
          expected = (await store.append(`c-${run}-${w}`, [e], { expectedRevision: expected })).nextExpectedRevision;
          resolved.set(e.id, now());
        }
      }),
    );
    const rate = (total * 1000) / (now() - t);
    const cpu = process.cpuUsage(cpu0);
    const server1 = await serverCpuMs(url);
    let serverMs = 0;
    for (const [pid, ms] of server1) serverMs += ms - (server0.get(pid) ?? 0);
    if (reader && sub) {
      await reading;
      await sub.close();
      await reader.close();
      for (const [id, at] of seen) lags.push(Math.max(0, at - resolved.get(id)!));
    }
    await Promise.all(stores.map((s) => s.close()));
    return { rate, nodeUs: (cpu.user + cpu.system) / total, serverUs: (serverMs * 1000) / total };
  };
  const shapes = [1, 4];
  const figures: Record<number, Record<Variant, RoundFigures[]>> = {};
  for (const n of shapes) figures[n] = { locked: [], version3: [], now: [] };
  for (let r = 0; r < rounds; r++) {
    for (const n of shapes) {
      // The order rotates each round, so no variant always runs first (or after the same one).
      const order = VARIANT_NAMES.map((_, i) => VARIANT_NAMES[(i + r) % VARIANT_NAMES.length]);
      for (const v of order) figures[n][v].push(await runAdapter(true, v, n));
    }
  }
  const noGroup = { locked: (await runAdapter(false, 'locked', 1)).rate, lockFree: (await runAdapter(false, 'now', 1)).rate };
  // One more lock-free round with a live subscriber on a store of its own (not in the rates above).
  await runAdapter(true, 'now', 1, true);
  const shape = (n: number) => {
    const f = figures[n];
    const col = (v: Variant) => ({
      rate: median(f[v].map((x) => x.rate)),
      range: range(f[v].map((x) => x.rate)),
      nodeUs: median(f[v].map((x) => x.nodeUs)),
      serverUs: median(f[v].map((x) => x.serverUs)),
    });
    return {
      locked: col('locked'),
      version3: col('version3'),
      now: col('now'),
      nowOverLocked: median(f.now.map((x, i) => x.rate / f.locked[i].rate)),
      nowOverVersion3: median(f.now.map((x, i) => x.rate / f.version3[i].rate)),
      version3OverLocked: median(f.version3.map((x, i) => x.rate / f.locked[i].rate)),
    };
  };
  const sorted = [...lags].sort((a, b) => a - b);
  const lag = { median: median(lags), p99: sorted[Math.floor(sorted.length * 0.99)], max: sorted[sorted.length - 1] };
  return { raw, oneProcess: shape(1), fourProcesses: shape(4), noGroup, lag };
}

async function readBench(url: string, o: PostgresBenchOptions) {
  const store = new PostgresEventStore({ connectionString: url });
  const pool = new Pool({ connectionString: url, max: 1 });
  // The database is dropped WITH (FORCE) at the end; a client still closing then must not crash the bench.
  pool.on('error', () => undefined);
  try {
    // The tables written so far are dropped: (c) reads exactly n events.
    await pool.query('TRUNCATE tollgate_events');
    let t = now();
    for (let written = 0, b = 0; written < o.events; b++) {
      const count = Math.min(FILL_BATCH, o.events - written);
      await store.append(
        `fill-${b % 200}`,
        Array.from({ length: count }, (_, i) => event(written + i)),
        { expectedRevision: 'any' },
      );
      written += count;
    }
    const fillMs = now() - t;
    o.say(`    filled ${fmt(o.events)} events through append (${FILL_BATCH}/call) = ${fmt((o.events * 1000) / fillMs)} events/s`);
    const adapterPass = async () => {
      const t0 = now();
      let from = 0n;
      let n = 0;
      for (;;) {
        const batch = await store.readAll({ fromPosition: from + 1n, maxCount: READ_BATCH });
        if (batch.length === 0) break;
        n += batch.length;
        from = batch[batch.length - 1].position;
      }
      return (n * 1000) / (now() - t0);
    };
    const rawPass = async () => {
      const t0 = now();
      let from = '0';
      let n = 0;
      for (;;) {
        const { rows } = await pool.query<{ position: string }>(
          'SELECT * FROM tollgate_events WHERE position > $1 ORDER BY position LIMIT $2',
          [from, READ_BATCH],
        );
        if (rows.length === 0) break;
        n += rows.length;
        from = rows[rows.length - 1].position;
      }
      return (n * 1000) / (now() - t0);
    };
    let adapter = 0;
    let raw = 0;
    for (let pass = 0; pass < 2; pass++) {
      raw = Math.max(raw, await rawPass());
      adapter = Math.max(adapter, await adapterPass());
    }
    let rebuild: number | string = 'skipped (--no-rebuild)';
    if (o.rebuild) {
      const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
      const prefix = `bench:${randomUUID().slice(0, 8)}:`;
      try {
        t = now();
        const r = await rebuildProjection({ store, redis, ks: new Keyspace(prefix), projection: benchBalances });
        rebuild = (r.events * 1000) / (now() - t);
      } catch (err) {
        rebuild = `failed: ${(err as Error).message.split('\n')[0]}`;
      } finally {
        redis.disconnect();
        await cleanupPrefix(redisUrl, prefix);
      }
    }
    return { adapter, raw, rebuild, fillEventsPerSecond: (o.events * 1000) / fillMs };
  } finally {
    await pool.end();
    await store.close();
  }
}

/** Runs the PostgreSQL column; a server that does not answer makes it a one-line skip. */
function sayConcurrent(o: PostgresBenchOptions, conc: Awaited<ReturnType<typeof concurrentBench>>) {
  o.say(`(a2) 50 concurrent writers x 40 single-event appends: raw (pool of 10, 1 tx each, no order guarantee) ${fmt(conc.raw)} appends/s`);
  const col = (c: { rate: number; range: string; nodeUs: number; serverUs: number }) =>
    `${fmt(c.rate)} appends/s (${c.range}; CPU/append node ${c.nodeUs.toFixed(0)} µs, server ${c.serverUs.toFixed(0)} µs)`;
  for (const [label, r] of [
    ['1 store', conc.oneProcess],
    ['4 stores (as 4 processes)', conc.fourProcesses],
  ] as const) {
    o.say(`     ${label}, group commit:`);
    o.say(`       locked (the old append lock, 1 batch in flight)  ${col(r.locked)}`);
    o.say(`       version 3 (lock-free, decided one by one, 1 batch of all) ${col(r.version3)}`);
    o.say(`       now (decided together, 1 batch of all)            ${col(r.now)}`);
    o.say(
      `       now/locked ${r.nowOverLocked.toFixed(2)}, now/version 3 ${r.nowOverVersion3.toFixed(2)}, version 3/locked ${r.version3OverLocked.toFixed(2)}`,
    );
  }
  o.say(`     1 store, no group commit: locked ${fmt(conc.noGroup.locked)} appends/s, lock-free ${fmt(conc.noGroup.lockFree)} appends/s`);
  o.say(
    `(a3) live subscriber, lock-free 1-store rounds: append resolved -> event yielded, median ${conc.lag.median.toFixed(1)} ms, p99 ${conc.lag.p99.toFixed(1)} ms, max ${conc.lag.max.toFixed(1)} ms`,
  );
}

/** How the events table was read during the run: sequential scans mean a decision read the whole table. */
async function sayScans(url: string, o: PostgresBenchOptions) {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('SELECT pg_stat_force_next_flush()').catch(() => undefined);
    const { rows } = await c.query(
      "SELECT seq_scan, seq_tup_read, idx_scan, n_tup_ins FROM pg_stat_user_tables WHERE relname = 'tollgate_events'",
    );
    const r = rows[0] as { seq_scan: string; seq_tup_read: string; idx_scan: string; n_tup_ins: string };
    o.say(
      `     tollgate_events during the run: ${r.seq_scan} sequential scans (${fmt(Number(r.seq_tup_read))} rows read), ${r.idx_scan} index scans, ${fmt(Number(r.n_tup_ins))} rows inserted`,
    );
  } finally {
    await c.end();
  }
}

export async function benchPostgres(o: PostgresBenchOptions): Promise<Record<string, unknown> | string> {
  const admin = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `tollgate_bench_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
  const adminClient = new Client({ connectionString: admin, connectionTimeoutMillis: 3_000 });
  try {
    await adminClient.connect();
    await adminClient.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await adminClient.end().catch(() => undefined);
    return `skipped: PostgreSQL at ${admin.replace(/\/\/[^@/]*@/, '//***@')} did not answer (${(err as Error).message})`;
  }
  const u = new URL(admin);
  u.pathname = `/${name}`;
  const url = u.toString();
  const out: Record<string, unknown> = {};
  try {
    const settings = await adminClient.query(
      "SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS sc, current_setting('fsync') AS f",
    );
    const s = settings.rows[0] as { v: string; sc: string; f: string };
    o.say(`PostgreSQL ${s.v} (fsync=${s.f}, synchronous_commit=${s.sc}), database ${name}`);
    const schema = new PostgresEventStore({ connectionString: url });
    await schema.ping(); // creates the table the raw inserts use too
    await schema.close();
    const seq = new Client({ connectionString: url });
    await seq.connect();
    await seq.query(RAW_SEQUENCE);
    await seq.end();
    if (o.concurrentOnly) {
      o.say(
        `load average at start ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')}`,
      );
      const conc = await concurrentBench(url, 50, 40, o.rounds, o.inFlight);
      sayConcurrent(o, conc);
      await sayScans(url, o);
      o.say(
        `load average at end ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')}`,
      );
      return { concurrent: conc };
    }
    const single = await writeBench(url, o, 1, o.singlePerRound);
    out.single = single;
    o.say(
      `(a) 1 event per transaction: raw INSERT ${fmt(single.raw)} tx/s (${single.rawRange}), adapter ${fmt(single.adapter)} appends/s (${single.adapterRange}), adapter/raw ${single.ratio.toFixed(2)}`,
    );
    const ten = await writeBench(url, o, 10, o.batchesPerRound);
    out.ten = ten;
    o.say(
      `(b) 10 events per transaction: raw INSERT ${fmt(ten.raw)} tx/s (${ten.rawRange}; ${fmt(ten.raw * 10)} events/s), adapter ${fmt(ten.adapter)} appends/s (${ten.adapterRange}; ${fmt(ten.adapter * 10)} events/s), adapter/raw ${ten.ratio.toFixed(2)}`,
    );
    const conc = await concurrentBench(url, 50, 40, o.rounds >= 3 ? 3 : o.rounds, o.inFlight);
    out.concurrent = conc;
    sayConcurrent(o, conc);
    const read = await readBench(url, o);
    out.read = read;
    o.say(
      `(c) readAll of ${fmt(o.events)} events in batches of ${READ_BATCH} (best of 2): adapter ${fmt(read.adapter)} events/s, raw SELECT ${fmt(read.raw)} events/s, adapter/raw ${(read.adapter / read.raw).toFixed(2)}`,
    );
    o.say(
      typeof read.rebuild === 'string'
        ? `    projection rebuild from PostgreSQL: ${read.rebuild}`
        : `    projection rebuild from PostgreSQL into Redis (rebuild.bench.ts's projection): ${fmt(read.rebuild)} events/s`,
    );
    return out;
  } finally {
    await adminClient.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await adminClient.end();
  }
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const opt = (n: string, def: number) => (args.includes(`--${n}`) ? Number(args[args.indexOf(`--${n}`) + 1]) : def);
  benchPostgres({
    rounds: opt('rounds', 5),
    singlePerRound: opt('single', 1_000),
    batchesPerRound: opt('batches', 300),
    roundCapMs: opt('round-ms', 3_000),
    events: opt('pg-events', 200_000),
    rebuild: !args.includes('--no-rebuild'),
    concurrentOnly: args.includes('--concurrent-only'),
    inFlight: args.includes('--in-flight') ? opt('in-flight', 4) : undefined,
    say: (l) => console.log(l),
  }).then(
    (r) => typeof r === 'string' && console.log(`PostgreSQL: ${r}`),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
