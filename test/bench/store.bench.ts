/**
 * Event store benchmark (npm run bench:store = tsx test/bench/store.bench.ts).
 *
 * In one temp directory, with the adapter's pragmas (WAL, synchronous=FULL) and the adapter's table:
 *  (a) raw better-sqlite3 single-row insert transactions/s vs SqliteEventStore.append of one event;
 *  (a2) 50 concurrent writers appending one event each (the API's pattern): raw one transaction per
 *      append vs the adapter's group commit (and the adapter with group commit off);
 *  (b) raw 10-row transactions vs append of 10 events;
 *  (c) projection rebuild speed over 1,000,000 events: for now readAll in batches of 5,000 through the
 *      adapter (events/s, next to a raw SELECT + JSON.parse of the same rows; best of 2 alternating
 *      passes), then the hook below.
 *
 * The fsync-bound cases run a few thousand transactions in alternating rounds (raw, adapter, raw, …;
 * each round at most 3 s) and report the median round and the median per-round ratio, so a disk
 * hiccup does not decide the ratio.
 *
 * Then the same cases on PostgreSQL (test/bench/store-postgres.bench.ts), when one answers.
 *
 * Options: --events N (default 1,000,000)   --rounds N (default 5)   --single N (default 2,000 per round)
 *          --batches N (default 500 per round)   --round-ms N (default 3,000)   --no-rebuild   --json
 *          --pg-events N (PostgreSQL readAll/rebuild, default 200,000)   --no-postgres
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NewEvent } from '../../src/platform/eventstore/port';
import { SCHEMA, SqliteEventStore } from '../../src/platform/eventstore/sqlite';
import { event } from './bench-events';
import { benchPostgres } from './store-postgres.bench';

const args = process.argv.slice(2);
const opt = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const TOTAL_EVENTS = opt('events', 1_000_000);
const ROUNDS = opt('rounds', 5);
const SINGLE_PER_ROUND = opt('single', 2_000);
const BATCH_TX_PER_ROUND = opt('batches', 500);
/** A round stops early after this long (a loaded disk can make fsync 20x slower). */
const ROUND_CAP_MS = opt('round-ms', 3_000);
const READ_BATCH = 5_000;
const FILL_BATCH = 10_000;

function rawDb(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(SCHEMA);
  return db;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => performance.now();
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

interface Rates {
  raw: number[];
  adapter: number[];
}

interface WriteResult {
  raw: number;
  adapter: number;
  /** adapter/raw per round, so a slow fsync in one round does not skew the ratio. */
  ratio: number;
  rawRange: [number, number];
  adapterRange: [number, number];
}

const range = (xs: number[]): [number, number] => [Math.min(...xs), Math.max(...xs)];

async function writeBench(dir: string, perTx: number, txPerRound: number): Promise<WriteResult> {
  const rates: Rates = { raw: [], adapter: [] };
  const db = rawDb(join(dir, `raw-${perTx}.sqlite`));
  const insert = db.prepare(
    'INSERT INTO events (event_id, stream_id, stream_revision, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const tx = db.transaction((stream: string, first: number, events: NewEvent[]) => {
    const created = new Date().toISOString();
    for (let i = 0; i < events.length; i++) {
      const e = events[i];
      insert.run(e.id, stream, first + i, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata ?? {}), created);
    }
  });
  const store = new SqliteEventStore({ file: join(dir, `adapter-${perTx}.sqlite`) });
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const stream = `bench-${perTx}-${round}`;
      const batches = Array.from({ length: txPerRound }, (_, b) => Array.from({ length: perTx }, (_, i) => event(b * perTx + i)));
      let t = now();
      let stop = t + ROUND_CAP_MS;
      let b = 0;
      for (; b < txPerRound && (b < 50 || now() < stop); b++) tx.immediate(stream, b * perTx, batches[b]);
      rates.raw.push((b * 1000) / (now() - t));

      const batches2 = Array.from({ length: txPerRound }, (_, b) => Array.from({ length: perTx }, (_, i) => event(b * perTx + i)));
      t = now();
      stop = t + ROUND_CAP_MS;
      let expected: bigint | 'no_stream' = 'no_stream';
      for (b = 0; b < txPerRound && (b < 50 || now() < stop); b++) {
        const r = await store.append(stream, batches2[b], { expectedRevision: expected });
        expected = r.nextExpectedRevision;
      }
      rates.adapter.push((b * 1000) / (now() - t));
    }
  } finally {
    db.close();
    await store.close();
  }
  return {
    raw: median(rates.raw),
    adapter: median(rates.adapter),
    ratio: median(rates.raw.map((r, i) => rates.adapter[i] / r)),
    rawRange: range(rates.raw),
    adapterRange: range(rates.adapter),
  };
}

/**
 * The API's pattern: many requests appending one event each to their own streams at the same time.
 * Raw: one transaction (one fsync) per append, as a store without group commit must do. Adapter:
 * the same appends issued concurrently, written by group commit.
 */
async function concurrentBench(
  dir: string,
  writers: number,
  perWriter: number,
): Promise<{ raw: number; adapter: number; noGroup: number }> {
  const db = rawDb(join(dir, 'raw-concurrent.sqlite'));
  const insert = db.prepare(
    'INSERT INTO events (event_id, stream_id, stream_revision, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const tx = db.transaction((stream: string, rev: number, e: NewEvent) => {
    insert.run(e.id, stream, rev, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata ?? {}), new Date().toISOString());
  });
  const total = writers * perWriter;
  const runAdapter = async (groupCommit: boolean) => {
    const store = new SqliteEventStore({ file: join(dir, `adapter-concurrent-${groupCommit}.sqlite`), groupCommit });
    const events = Array.from({ length: total }, (_, k) => event(k));
    const t = now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        let expected: bigint | 'no_stream' = 'no_stream';
        for (let i = 0; i < perWriter; i++) {
          expected = (await store.append(`c-${w}`, [events[w * perWriter + i]], { expectedRevision: expected })).nextExpectedRevision;
        }
      }),
    );
    const rate = (total * 1000) / (now() - t);
    await store.close();
    return rate;
  };
  try {
    const events = Array.from({ length: total }, (_, k) => event(k));
    const t = now();
    for (let i = 0; i < perWriter; i++) for (let w = 0; w < writers; w++) tx.immediate(`c-${w}`, i, events[w * perWriter + i]);
    const raw = (total * 1000) / (now() - t);
    const adapter = await runAdapter(true);
    const noGroup = await runAdapter(false);
    return { raw, adapter, noGroup };
  } finally {
    db.close();
  }
}

async function fill(store: SqliteEventStore, n: number): Promise<number> {
  const t = now();
  for (let written = 0, b = 0; written < n; b++) {
    const count = Math.min(FILL_BATCH, n - written);
    const events = new Array<NewEvent>(count);
    for (let i = 0; i < count; i++) events[i] = event(written + i);
    await store.append(`fill-${b % 200}`, events, { expectedRevision: 'any' });
    written += count;
  }
  return now() - t;
}

/** readAll through the adapter in batches of 5,000, as a projection rebuild reads. */
async function readAllBench(store: SqliteEventStore): Promise<{ events: number; ms: number }> {
  const t = now();
  let from = 0n;
  let events = 0;
  for (;;) {
    const batch = await store.readAll({ fromPosition: from + 1n, maxCount: READ_BATCH });
    if (batch.length === 0) break;
    events += batch.length;
    from = batch[batch.length - 1].position;
  }
  return { events, ms: now() - t };
}

/** The same read with raw better-sqlite3: SELECT in batches of 5,000 and JSON.parse data + metadata. */
function rawReadBench(file: string): { events: number; ms: number } {
  const db = new Database(file, { readonly: true });
  const select = db.prepare('SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?').safeIntegers(true);
  const t = now();
  let from = 0n;
  let events = 0;
  for (;;) {
    const rows = select.all(from, READ_BATCH) as { position: bigint; data: string; metadata: string }[];
    if (rows.length === 0) break;
    for (const r of rows) {
      JSON.parse(r.data);
      JSON.parse(r.metadata);
    }
    events += rows.length;
    from = rows[rows.length - 1].position;
  }
  const ms = now() - t;
  db.close();
  return { events, ms };
}

/**
 * HOOK for the projection runner (src/platform/projections/runner.ts, src/platform/projections/rebuild.ts): the real
 * rebuild of 1,000,000 events into Redis. test/bench/rebuild.bench.ts exports `benchRebuild(n)`; it is
 * run here when it exists and Redis answers (REDIS_URL, default redis://127.0.0.1:6379).
 * Replace or extend this function to report more projections.
 */
export async function projectionRebuildHook(n: number): Promise<{ eventsPerSecond: number; events: number } | string> {
  let mod: { benchRebuild?: (n: number, o?: { quiet?: boolean }) => Promise<{ eventsPerSecond: number; events: number }> };
  try {
    mod = await import('./rebuild.bench');
  } catch (err) {
    return `skipped: test/bench/rebuild.bench.ts not loadable (${(err as Error).message.split('\n')[0]})`;
  }
  if (typeof mod.benchRebuild !== 'function') return 'skipped: rebuild.bench.ts exports no benchRebuild(n)';
  try {
    return await mod.benchRebuild(n, { quiet: true });
  } catch (err) {
    return `failed: ${(err as Error).message.split('\n')[0]}`;
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-store-'));
  const started = now();
  const out: Record<string, unknown> = {};
  const say = (s: string) => {
    if (!args.includes('--json')) console.log(s);
  };
  try {
    say(`event store bench in ${dir} (WAL, synchronous=FULL); writes: ${ROUNDS} alternating rounds raw/adapter, median (min-max)`);

    const single = await writeBench(dir, 1, SINGLE_PER_ROUND);
    out.single = single;
    say(
      `(a) 1 event per transaction, ${SINGLE_PER_ROUND}/round: raw ${fmt(single.raw)} tx/s (${fmt(single.rawRange[0])}-${fmt(single.rawRange[1])}), adapter ${fmt(single.adapter)} appends/s (${fmt(single.adapterRange[0])}-${fmt(single.adapterRange[1])}), adapter/raw ${single.ratio.toFixed(2)}`,
    );

    const ten = await writeBench(dir, 10, BATCH_TX_PER_ROUND);
    out.ten = ten;
    say(
      `(b) 10 events per transaction, ${BATCH_TX_PER_ROUND}/round: raw ${fmt(ten.raw)} tx/s (${fmt(ten.rawRange[0])}-${fmt(ten.rawRange[1])}; ${fmt(ten.raw * 10)} events/s), adapter ${fmt(ten.adapter)} appends/s (${fmt(ten.adapterRange[0])}-${fmt(ten.adapterRange[1])}; ${fmt(ten.adapter * 10)} events/s), adapter/raw ${ten.ratio.toFixed(2)}`,
    );

    const conc = await concurrentBench(dir, 50, 40);
    out.concurrent = conc;
    say(
      `(a2) 50 concurrent writers x 40 single-event appends, one stream each: raw (1 tx each) ${fmt(conc.raw)} appends/s, adapter with group commit ${fmt(conc.adapter)} appends/s (${(conc.adapter / conc.raw).toFixed(1)}x raw), adapter without ${fmt(conc.noGroup)} appends/s`,
    );

    const file = join(dir, 'rebuild.sqlite');
    const store = new SqliteEventStore({ file });
    let fillMs: number;
    const best = (a: { events: number; ms: number } | null, b: { events: number; ms: number }) => (a && a.ms <= b.ms ? a : b);
    let read: { events: number; ms: number } | null = null;
    let raw: { events: number; ms: number } | null = null;
    try {
      fillMs = await fill(store, TOTAL_EVENTS);
      say(
        `(c) filled ${fmt(TOTAL_EVENTS)} events through append (${FILL_BATCH}/call) in ${(fillMs / 1000).toFixed(1)} s = ${fmt((TOTAL_EVENTS * 1000) / fillMs)} events/s; file ${fmt(statSync(file).size / 1e6)} MB`,
      );
      // CPU-bound: alternate raw and adapter, keep the best pass of each (noise only ever slows a pass).
      for (let pass = 0; pass < 2; pass++) {
        raw = best(raw, rawReadBench(file));
        read = best(read, await readAllBench(store));
      }
    } finally {
      await store.close();
    }
    if (!read || !raw) throw new Error('no read pass ran');
    out.readAll = { events: read.events, ms: read.ms, eventsPerSecond: (read.events * 1000) / read.ms, fillMs };
    out.rawRead = { events: raw.events, ms: raw.ms, eventsPerSecond: (raw.events * 1000) / raw.ms };
    say(
      `    readAll in batches of ${READ_BATCH} (best of 2 passes): adapter ${fmt(read.events)} events in ${(read.ms / 1000).toFixed(2)} s = ${fmt((read.events * 1000) / read.ms)} events/s; raw SELECT + JSON.parse ${fmt((raw.events * 1000) / raw.ms)} events/s; adapter/raw ${(raw.ms / read.ms).toFixed(2)}`,
    );

    if (!args.includes('--no-rebuild')) {
      const rebuild = await projectionRebuildHook(TOTAL_EVENTS);
      out.rebuild = rebuild;
      say(
        typeof rebuild === 'string'
          ? `    projection rebuild (hook): ${rebuild}`
          : `    projection rebuild (hook, rebuild.bench.ts into Redis): ${fmt(rebuild.events)} events at ${fmt(rebuild.eventsPerSecond)} events/s`,
      );
    }
    if (!args.includes('--no-postgres')) {
      say('\nPostgreSQL column:');
      const pg = await benchPostgres({
        rounds: ROUNDS,
        singlePerRound: Math.min(SINGLE_PER_ROUND, 1_000),
        batchesPerRound: Math.min(BATCH_TX_PER_ROUND, 300),
        roundCapMs: ROUND_CAP_MS,
        events: opt('pg-events', 200_000),
        rebuild: !args.includes('--no-rebuild'),
        say,
      });
      out.postgres = pg;
      if (typeof pg === 'string') say(`PostgreSQL: ${pg}`);
    }
    say(`total ${((now() - started) / 1000).toFixed(1)} s`);
    if (args.includes('--json')) console.log(JSON.stringify(out));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
