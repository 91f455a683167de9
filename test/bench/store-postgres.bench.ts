/**
 * The PostgreSQL column of bench:store (test/bench/store.bench.ts calls `benchPostgres`; alone:
 * npx tsx test/bench/store-postgres.bench.ts). In a database of its own on BENCH_DATABASE_URL or
 * TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres), dropped afterwards:
 *  (a) raw single-row INSERT (autocommit) vs PostgresEventStore.append of one event;
 *  (b) raw 10-row INSERT vs append of 10 events;
 *  (a2) 50 concurrent writers x 40 single-event appends: raw inserts over a pool of 10 (no commit-order
 *      guarantee) vs the adapter with group commit, and without;
 *  (c) readAll of n events in batches of 5,000 vs raw SELECT of the same rows, and a projection
 *      rebuild (rebuild.bench.ts's balance-like projection) from PostgreSQL into Redis.
 * Raw writes use the adapter's table (same indexes); they skip the advisory lock, the revision check
 * and the idempotency lookups, so adapter/raw is the price of those.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Client, Pool } from 'pg';
import type { NewEvent } from '../../src/platform/eventstore/port';
import { PostgresEventStore } from '../../src/platform/eventstore/postgres';
import { APPEND_LOCK_KEY } from '../../src/platform/eventstore/postgres-schema';
import { Keyspace } from '../../src/platform/projections/keyspace';
import { rebuildProjection } from '../../src/platform/projections/rebuild';
import { cleanupPrefix } from '../support/redis';
import { event } from './bench-events';
import { benchBalances } from './rebuild.bench';

export interface PostgresBenchOptions {
  rounds: number;
  singlePerRound: number;
  batchesPerRound: number;
  roundCapMs: number;
  events: number;
  rebuild: boolean;
  say: (line: string) => void;
}

const READ_BATCH = 5_000;
const FILL_BATCH = 10_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => performance.now();
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const range = (xs: number[]) => `${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}`;

const INSERT_COLUMNS = '(event_id, stream_id, stream_revision, type, data, metadata, created)';

/** One multi-row INSERT (its own transaction), the way a store with no rules at all would write. */
function rawInsert(pool: Pool, stream: string, first: number, events: NewEvent[]) {
  const values: unknown[] = [];
  const rows = events.map((e, i) => {
    values.push(e.id, stream, first + i, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata ?? {}));
    const b = i * 6;
    return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, now())`;
  });
  return pool.query(`INSERT INTO tollgate_events ${INSERT_COLUMNS} VALUES ${rows.join(', ')}`, values);
}

async function writeBench(url: string, o: PostgresBenchOptions, perTx: number, txPerRound: number) {
  const pool = new Pool({ connectionString: url, max: 1 });
  const store = new PostgresEventStore({ connectionString: url });
  const raw: number[] = [];
  const adapter: number[] = [];
  try {
    for (let round = 0; round < o.rounds; round++) {
      let t = now();
      let b = 0;
      for (; b < txPerRound && (b < 20 || now() < t + o.roundCapMs); b++) {
        await rawInsert(pool, `raw-${perTx}-${round}`, b * perTx, Array.from({ length: perTx }, (_, i) => event(b * perTx + i)));
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
  return { raw: median(raw), adapter: median(adapter), ratio: median(raw.map((r, i) => adapter[i] / r)), rawRange: range(raw), adapterRange: range(adapter) };
}

/**
 * 50 writers of single-event appends, each to a stream of its own: raw inserts over a pool of 10, then
 * the adapter's two append paths in alternating rounds, over `processes` stores (each its own pool and
 * group-commit queue, as separate api processes would be): 'serialized' (the whole batch under the
 * append lock, the only path before schema version 2) and 'grouped' (decided outside the lock, one
 * INSERT under it). Medians over the rounds.
 */
async function concurrentBench(url: string, writers: number, perWriter: number, rounds = 3) {
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
  const runAdapter = async (groupCommit: boolean, appendPath: 'grouped' | 'serialized', processes: number) => {
    const stores = Array.from({ length: processes }, () => new PostgresEventStore({ connectionString: url, groupCommit, appendPath, poolSize: 4 }));
    await Promise.all(stores.map((s) => s.ping()));
    run++;
    t = now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const store = stores[w % processes];
        let expected: bigint | 'no_stream' = 'no_stream';
        for (let i = 0; i < perWriter; i++) {
          expected = (await store.append(`c-${run}-${w}`, [event(i)], { expectedRevision: expected })).nextExpectedRevision;
        }
      }),
    );
    const rate = (total * 1000) / (now() - t);
    await Promise.all(stores.map((s) => s.close()));
    return rate;
  };
  const shapes = [1, 4];
  const serialized: Record<number, number[]> = { 1: [], 4: [] };
  const grouped: Record<number, number[]> = { 1: [], 4: [] };
  for (let r = 0; r < rounds; r++) {
    for (const n of shapes) {
      serialized[n].push(await runAdapter(true, 'serialized', n));
      grouped[n].push(await runAdapter(true, 'grouped', n));
    }
  }
  const noGroup = { serialized: await runAdapter(false, 'serialized', 1), grouped: await runAdapter(false, 'grouped', 1) };
  const shape = (n: number) => ({
    serialized: median(serialized[n]),
    grouped: median(grouped[n]),
    ratio: median(grouped[n].map((g, i) => g / serialized[n][i])),
    serializedRange: range(serialized[n]),
    groupedRange: range(grouped[n]),
  });
  return { raw, oneProcess: shape(1), fourProcesses: shape(4), noGroup };
}

/**
 * Time inside the append lock per append, timed by the client: batches of N single-event appends.
 * 'serialized' takes the lock before its first decision and holds it through COMMIT, so the whole
 * call + COMMIT is inside it. 'grouped' decides first (untimed), then lock → one INSERT → COMMIT,
 * the statements tollgate_append_grouped runs under the lock, timed from the lock request on.
 */
async function lockHoldBench(url: string, batchSize: number, rounds: number) {
  const c = new Client({ connectionString: url });
  await c.connect();
  const serialized: number[] = [];
  const grouped: number[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      const ids = Array.from({ length: batchSize }, () => randomUUID());
      const streams = ids.map((id) => `lock-${id}`);
      const data = ids.map((_, i) => JSON.stringify(event(i).data));
      const meta = ids.map(() => '{}');
      const types = ids.map(() => 'BenchEvent');
      const offsets = ids.map((_, i) => i);
      const counts = ids.map(() => 1);
      const expected = ids.map(() => 'no_stream');
      // serialized: lock taken before the first decision, so lock→COMMIT ≈ the whole call + COMMIT.
      let t0 = now();
      await c.query('BEGIN');
      await c.query('SELECT count(*) FROM tollgate_append_batch($1, $2, $3, $4, $5, $6, $7, $8, now())', [
        streams, expected, offsets, counts, ids, types, data, meta,
      ]);
      await c.query('COMMIT');
      serialized.push(((now() - t0) * 1000) / batchSize);
      // grouped: the decisions first (outside the lock), then lock → one INSERT → COMMIT, timed.
      const ids2 = ids.map(() => randomUUID());
      const streams2 = ids2.map((id) => `lock-${id}`);
      await c.query('BEGIN');
      await c.query('SELECT count(*) FROM unnest($1::text[], $2::text[]) AS u(s, e), LATERAL tollgate_append_decide(u.s, u.e, ARRAY[u.s])', [streams2, expected]);
      t0 = now();
      await c.query(`SELECT pg_advisory_xact_lock(${APPEND_LOCK_KEY})`);
      await c.query(
        `INSERT INTO tollgate_events ${INSERT_COLUMNS}
         SELECT u.id, u.s, 0, u.t, u.d::json, u.m::json, now() FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(id, s, t, d, m, k) ORDER BY k`,
        [ids2, streams2, types, data, meta],
      );
      await c.query('COMMIT');
      grouped.push(((now() - t0) * 1000) / batchSize);
    }
  } finally {
    await c.end();
  }
  return { serialized: median(serialized), grouped: median(grouped), ratio: median(serialized) / median(grouped) };
}

async function readBench(url: string, o: PostgresBenchOptions) {
  const store = new PostgresEventStore({ connectionString: url });
  const pool = new Pool({ connectionString: url, max: 1 });
  try {
    // The tables written so far are dropped: (c) reads exactly n events.
    await pool.query('TRUNCATE tollgate_events');
    let t = now();
    for (let written = 0, b = 0; written < o.events; b++) {
      const count = Math.min(FILL_BATCH, o.events - written);
      await store.append(`fill-${b % 200}`, Array.from({ length: count }, (_, i) => event(written + i)), { expectedRevision: 'any' });
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
    const settings = await adminClient.query("SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS sc, current_setting('fsync') AS f");
    const s = settings.rows[0] as { v: string; sc: string; f: string };
    o.say(`PostgreSQL ${s.v} (fsync=${s.f}, synchronous_commit=${s.sc}), database ${name}`);
    const schema = new PostgresEventStore({ connectionString: url });
    await schema.ping(); // creates the table the raw inserts use too
    await schema.close();
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
    const conc = await concurrentBench(url, 50, 40, o.rounds >= 3 ? 3 : o.rounds);
    out.concurrent = conc;
    o.say(
      `(a2) 50 concurrent writers x 40 single-event appends: raw (pool of 10, 1 tx each, no order guarantee) ${fmt(conc.raw)} appends/s`,
    );
    for (const [label, r] of [['1 store', conc.oneProcess], ['4 stores (as 4 processes)', conc.fourProcesses]] as const) {
      o.say(
        `     ${label}, group commit: serialized (lock around the batch) ${fmt(r.serialized)} appends/s (${r.serializedRange}), grouped (lock around one INSERT) ${fmt(r.grouped)} appends/s (${r.groupedRange}), grouped/serialized ${r.ratio.toFixed(2)}`,
      );
    }
    o.say(`     1 store, no group commit: serialized ${fmt(conc.noGroup.serialized)} appends/s, grouped ${fmt(conc.noGroup.grouped)} appends/s`);
    const hold = await lockHoldBench(url, 50, 15);
    out.lockHold = hold;
    o.say(
      `(a3) time inside the append lock per append, batches of 50 single-event appends (median of 15): serialized ${hold.serialized.toFixed(1)} µs, grouped ${hold.grouped.toFixed(1)} µs (${hold.ratio.toFixed(1)}x shorter)`,
    );
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
    say: (l) => console.log(l),
  }).then(
    (r) => typeof r === 'string' && console.log(`PostgreSQL: ${r}`),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
