/**
 * PostgreSQL-only behaviour beyond the shared contract: commit order under concurrent writers,
 * LISTEN/NOTIFY wake-ups and the polling fallback, dropped connections, schema migration, and an
 * unreachable server. Runs when TEST_DATABASE_URL is set; each test starts from an empty database (one per
 * file, emptied before each test).
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { openEventStore } from '../../../src/init';
import { StoreUnavailable, WrongExpectedVersion } from '../../../src/platform/eventstore/port';
import type { AppendResult, RecordedEvent } from '../../../src/platform/eventstore/port';
import { PostgresEventStore, PostgresOptions } from '../../../src/platform/eventstore/postgres';
import { MIGRATIONS } from '../../../src/platform/eventstore/postgres-schema';
import { perFileTestDatabase, TEST_DATABASE_URL } from '../../support/postgres';
import { Collector, ev, evs } from './support/adapters';
import { sleep } from '../../support/wait';

/** A session whose transaction has taken an xid and stays open until the caller commits, rolls back or ends it. */
async function holdXid(connectionString: string): Promise<Client> {
  const c = new Client({ connectionString });
  await c.connect();
  try {
    await c.query('BEGIN');
    await c.query('SELECT pg_current_xact_id()');
  } catch (err) {
    await c.end();
    throw err;
  }
  return c;
}

const maybe = TEST_DATABASE_URL ? describe : describe.skip;

maybe('PostgreSQL event store', () => {
  const dbs = perFileTestDatabase('pg');
  afterAll(() => dbs.drop());
  const db = { url: '' };
  const open: PostgresEventStore[] = [];
  const store = (opts: Partial<PostgresOptions> = {}) => {
    const s = new PostgresEventStore({ connectionString: db.url, pollIntervalMs: 50, ...opts });
    open.push(s);
    return s;
  };
  const sql = async (text: string, values: unknown[] = []) => {
    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      return (await c.query(text, values)).rows;
    } finally {
      await c.end();
    }
  };

  beforeEach(async () => {
    db.url = await dbs.fresh();
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });

  test('commit order: 12 concurrent writers (multi-event appends, separate connections) and a live subscriber — no gap, no repeat', async () => {
    const reader = store({ pollIntervalMs: 1 });
    await reader.ping();
    const seen: RecordedEvent[] = [];
    const sub = reader.subscribeToAll();
    const consuming = (async () => {
      for await (const e of sub) seen.push(e);
    })();

    // Each writer has a pool of its own, half of them without group commit: many transactions
    // are in flight at once, each taking positions for 1–5 events.
    const writers = Array.from({ length: 12 }, (_, w) => store({ poolSize: 4, groupCommit: w % 2 === 0 }));
    const perWriter = 60;
    await Promise.all(
      writers.map(async (s, w) => {
        await Promise.all(
          Array.from({ length: 4 }, async (_, lane) => {
            for (let i = 0; i < perWriter / 4; i++) {
              await s.append(`w${w}-${lane}`, evs(1 + ((w + i) % 5)), { expectedRevision: 'any' });
            }
          }),
        );
      }),
    );
    const all = await reader.readAll();
    const deadline = Date.now() + 20_000;
    while (seen.length < all.length && Date.now() < deadline) await sleep(20);
    // A marker appended last and seen means anything delivered twice has been delivered by now
    // (100 ms of waiting proved that only on a quiet machine).
    const marker = ev('Marker');
    await reader.append('marker', [marker], { expectedRevision: 'no_stream' });
    while (!seen.some((e) => e.id === marker.id) && Date.now() < deadline + 20_000) await sleep(20);
    expect(seen[seen.length - 1]?.id).toBe(marker.id);
    seen.pop();
    await sub.close();
    await consuming;

    expect(all.length).toBeGreaterThan(12 * perWriter);
    const ids = seen.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length); // no repeat
    expect(ids).toEqual(all.map((e) => e.id)); // no gap, same order
    expect(seen.every((e, i) => i === 0 || e.position > seen[i - 1].position)).toBe(true);
  }, 120_000);

  test('a transaction holding an xid elsewhere holds the safe point: committed events wait (readAll, subscription) until it ends', async () => {
    const reader = store({ pollIntervalMs: 50, safePointWaitMs: 300 });
    const writer = store();
    const first = ev('A');
    await writer.append('s', [first], { expectedRevision: 'no_stream' });
    const sub = reader.subscribeToAll();
    const c = new Collector(sub, () => true);
    expect((await c.take(1, 15_000)).map((e) => e.id)).toEqual([first.id]);
    // Another session's transaction takes an xid (older than the append's below) and stays open.
    const blocker = await holdXid(db.url);
    try {
      const held = ev('B');
      const r = await writer.append('s', [held], { expectedRevision: 0n });
      expect((await writer.readStream('s')).map((e) => e.id)).toEqual([first.id, held.id]); // committed
      // It may still be joined by that older transaction's events, so no reader may pass it yet.
      expect((await reader.readAll({ fromPosition: r.position })).map((e) => e.id)).toEqual([]);
      await expect(c.take(1, 500)).rejects.toThrow(/timed out/);
      await blocker.query('COMMIT');
      expect((await c.take(1, 15_000)).map((e) => e.id)).toEqual([held.id]);
      expect((await reader.readAll({ fromPosition: r.position })).map((e) => e.id)).toEqual([held.id]);
    } finally {
      await blocker.end();
    }
    await sub.close();
  });

  test('a transaction holding an xid in ANOTHER database of the cluster does not hold readers back', async () => {
    const reader = store({ pollIntervalMs: 50, safePointWaitMs: 60_000 });
    const writer = store();
    // The admin database: another database on the same server.
    const blocker = await holdXid(TEST_DATABASE_URL!); // older than the append's xid, and still running
    try {
      const a = ev('A');
      await writer.append('s', [a], { expectedRevision: 'no_stream' });
      const sub = reader.subscribeToAll();
      const c = new Collector(sub, () => true);
      expect((await c.take(1, 15_000)).map((e) => e.id)).toEqual([a.id]);
      const t0 = Date.now();
      expect((await reader.readAll()).map((e) => e.id)).toEqual([a.id]);
      expect(Date.now() - t0).toBeLessThan(30_000);
      await sub.close();
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    }
  });

  test('readAll waits (briefly) for the safe point: an append then readAll sees the append', async () => {
    const s = store();
    const blocker = await holdXid(db.url);
    try {
      const a = ev('A');
      await s.append('s', [a], { expectedRevision: 'no_stream' });
      const reading = s.readAll();
      await sleep(100);
      await blocker.query('COMMIT');
      expect((await reading).map((e) => e.id)).toEqual([a.id]);
    } finally {
      await blocker.end();
    }
  });

  test('4 processes racing on one stream (any): revisions 0..n-1 and, in the global order, each stream in revision order', async () => {
    const stores = Array.from({ length: 4 }, () => store({ poolSize: 3 }));
    await Promise.all(
      stores.map(async (s, w) => {
        for (let i = 0; i < 15; i++) {
          await Promise.all([
            s.append('hot', [ev('H', { w, i })], { expectedRevision: 'any' }),
            s.append(`own-${w}`, evs(1 + (i % 3)), { expectedRevision: 'any' }),
          ]);
        }
      }),
    );
    const all = await store().readAll();
    expect(all.every((e, i) => i === 0 || e.position > all[i - 1].position)).toBe(true);
    const hot = all.filter((e) => e.stream === 'hot');
    expect(hot.map((e) => e.revision)).toEqual(hot.map((_, i) => BigInt(i)));
    expect(hot).toHaveLength(60);
    for (let w = 0; w < 4; w++) {
      const own = all.filter((e) => e.stream === `own-${w}`);
      expect(own.map((e) => e.revision)).toEqual(own.map((_, i) => BigInt(i)));
    }
  });

  test('one group-commit batch with fresh appends, a conflict, idempotent re-sends and an id stored elsewhere: each its own outcome, the written ones in one transaction', async () => {
    const s = store();
    const a0 = evs(2);
    await s.append('a', a0, { expectedRevision: 'no_stream' });
    const elsewhere = ev('E');
    await s.append('elsewhere', [elsewhere], { expectedRevision: 'no_stream' });
    // All queued in one turn: one batch.
    const fresh = [evs(3), evs(1), evs(2)];
    const outcomes = await Promise.allSettled([
      s.append('f0', fresh[0], { expectedRevision: 'no_stream' }),
      s.append('a', a0, { expectedRevision: 'no_stream' }), // idempotent re-send: the original result
      s.append('f1', fresh[1], { expectedRevision: 'any' }),
      s.append('c', [ev('C')], { expectedRevision: 4n }), // conflict: no such stream
      s.append('x', [ev('X'), elsewhere], { expectedRevision: 'no_stream' }), // an id stored in another stream
      s.append('f2', fresh[2], { expectedRevision: 'no_stream' }),
    ]);
    const [f0, again, f1, conflict, stolen, f2] = outcomes;
    expect(again).toEqual({ status: 'fulfilled', value: { nextExpectedRevision: 1n, position: expect.any(BigInt) } });
    expect(conflict.status).toBe('rejected');
    expect((conflict as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedVersion);
    expect(stolen.status).toBe('rejected');
    const written = [f0, f1, f2].map((o) => (o as PromiseFulfilledResult<AppendResult>).value);
    expect(written.map((r) => r.nextExpectedRevision)).toEqual([2n, 0n, 1n]);
    // One transaction: positions from one xid, each event at its index in the batch (the events of the
    // appends not written leave their numbers unused): f0 ends at 2, f1 at 5, f2 at 10.
    expect(written[1].position - written[0].position).toBe(3n);
    expect(written[2].position - written[1].position).toBe(5n);
    const all = await s.readAll();
    expect(all.filter((e) => e.stream.startsWith('f')).map((e) => e.id)).toEqual(fresh.flat().map((e) => e.id));
    expect((await s.readStream('x')).length).toBe(0);
    expect((await s.readStream('c')).length).toBe(0);
  });

  test('data and metadata are stored as the JSON text of the event, byte for byte', async () => {
    const s = store();
    const data = { q: 'say "hi"\\ back\nslash', u: 'ünï \u2028 😀', nul: 'a\u0000b', n: -1.5e-7, nested: [{ a: [] }, {}], empty: '' };
    const metadata = { actor: 'x"y', correlationId: '\\' };
    const e = { id: randomUUID(), type: 'T', data, metadata };
    await s.append('j', [e, ev('Second', [1, 'two'])], { expectedRevision: 'no_stream' });
    const rows = await sql('SELECT data::text AS d, metadata::text AS m FROM tollgate_events ORDER BY position');
    expect(rows).toEqual([
      { d: JSON.stringify(data), m: JSON.stringify(metadata) },
      { d: JSON.stringify([1, 'two']), m: JSON.stringify({ actor: 'contract-test' }) },
    ]);
    expect((await s.readStream('j'))[0]).toEqual(expect.objectContaining({ data, metadata }));
  });

  test('schema version 2 with events in it: migrated to 3, the old positions stay, new ones come after them, readers see both', async () => {
    const admin = new Client({ connectionString: db.url });
    await admin.connect();
    try {
      await admin.query('BEGIN');
      await admin.query('CREATE TABLE tollgate_schema (version int NOT NULL)');
      for (const m of MIGRATIONS.slice(0, 2)) await admin.query(m);
      await admin.query('INSERT INTO tollgate_schema (version) VALUES (2)');
      await admin.query('COMMIT');
      // Version 2's own path: identity positions 1..n.
      for (let i = 0; i < 3; i++) {
        await admin.query('SELECT * FROM tollgate_append_batch($1, $2, $3, $4, $5, $6, $7, $8, now())', [
          [`old-${i}`],
          ['no_stream'],
          [0],
          [2],
          [randomUUID(), randomUUID()],
          ['T', 'T'],
          ['{}', '{}'],
          ['{}', '{}'],
        ]);
      }
    } finally {
      await admin.end();
    }
    const s = store();
    const before = await s.readAll();
    expect(before.map((e) => e.position)).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    expect(await sql('SELECT version FROM tollgate_schema')).toEqual([{ version: MIGRATIONS.length }]);
    const r = await s.append('old-0', [ev('New')], { expectedRevision: 1n });
    expect(r.position).toBeGreaterThan(6n);
    const sub = s.subscribeToAll({ after: 4n });
    const c = new Collector(sub, () => true);
    expect((await c.take(3, 15_000)).map((e) => [e.stream, e.revision])).toEqual([
      ['old-2', 0n],
      ['old-2', 1n],
      ['old-0', 2n],
    ]);
    await sub.close();
  });

  test('LISTEN/NOTIFY wakes a subscriber at once when another process appends', async () => {
    const reader = store({ pollIntervalMs: 60_000 });
    const writer = store();
    await writer.append('s', [ev('A')], { expectedRevision: 'no_stream' });
    const sub = reader.subscribeToAll({ after: await reader.headPosition() });
    const c = new Collector(sub, () => true);
    const first = c.take(1, 1_000).catch(() => []); // the subscription's first read
    await first;
    for (const deadline = Date.now() + 20_000; !reader.listening && Date.now() < deadline;) await sleep(20);
    expect(reader.listening).toBe(true);
    const b = ev('B');
    const t0 = Date.now();
    await writer.append('s', [b], { expectedRevision: 0n });
    // "At once" against a poll every 60 s: milliseconds when quiet, and room for stalls of seconds under load.
    expect((await c.take(1, 15_000)).map((e) => e.id)).toEqual([b.id]);
    expect(Date.now() - t0).toBeLessThan(15_000);
    await sub.close();
  });

  test('the LISTEN connection killed: polling still delivers, the listener comes back, nothing lost or repeated', async () => {
    const reader = store({ pollIntervalMs: 100 });
    const writer = store();
    const sub = reader.subscribeToAll();
    const c = new Collector(sub, () => true);
    for (const deadline = Date.now() + 20_000; !reader.listening && Date.now() < deadline;) await sleep(20);
    expect(reader.listening).toBe(true);
    const written: string[] = [];
    for (let round = 0; round < 3; round++) {
      await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'`);
      const batch = evs(3);
      await writer.append(`s${round}`, batch, { expectedRevision: 'no_stream' });
      written.push(...batch.map((e) => e.id));
      expect((await c.take(3, 15_000)).map((e) => e.id)).toEqual(batch.map((e) => e.id));
    }
    for (const deadline = Date.now() + 20_000; !reader.listening && Date.now() < deadline;) await sleep(20);
    expect(reader.listening).toBe(true);
    const marker = ev('Marker');
    await writer.append('marker', [marker], { expectedRevision: 'no_stream' });
    expect(await c.before(marker.id)).toEqual([]);
    await sub.close();
    expect(written).toHaveLength(9);
  });

  test('every connection of the store killed mid-subscription: it resumes from its position, no gap, no repeat', async () => {
    const s = store({ pollIntervalMs: 20 });
    const writer = store();
    const sub = s.subscribeToAll();
    const c = new Collector(sub, () => true);
    const a = evs(5);
    await writer.append('x', a, { expectedRevision: 'no_stream' });
    expect((await c.take(5)).map((e) => e.id)).toEqual(a.map((e) => e.id));
    await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
    const b = evs(4);
    // The writer's own pooled connections were killed too: its first try may fail as unavailable.
    for (let i = 0; ; i++) {
      try {
        await writer.append('x', b, { expectedRevision: 4n });
        break;
      } catch (err) {
        expect(err).toBeInstanceOf(StoreUnavailable);
        if (i > 5) throw err;
      }
    }
    expect((await c.take(4, 10_000)).map((e) => e.id)).toEqual(b.map((e) => e.id));
    const marker = ev('Marker');
    await writer.append('marker', [marker], { expectedRevision: 'no_stream' });
    expect(await c.before(marker.id)).toEqual([]);
    await sub.close();
  });

  test('the schema is created once by processes starting together, and recorded with its version', async () => {
    const stores = Array.from({ length: 4 }, () => store());
    await Promise.all(stores.map((s) => s.ping()));
    expect(await sql('SELECT version FROM tollgate_schema')).toEqual([{ version: MIGRATIONS.length }]);
    await stores[0].append('x', [ev('A')], { expectedRevision: 'no_stream' });
    expect(await store().readStream('x')).toHaveLength(1);
  });

  test('a database migrated by a newer tollgate is refused with a clear error', async () => {
    await store().ping();
    await sql('UPDATE tollgate_schema SET version = $1', [MIGRATIONS.length + 1]);
    await expect(store().ping()).rejects.toThrow(/newer than this tollgate knows/);
  });

  test('an unreachable server: StoreUnavailable, quickly, for every call; openEventStore picks this adapter', async () => {
    const s = openEventStore({ EVENT_STORE: 'postgres', DATA_DIR: '/nonexistent', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x' });
    open.push(s as PostgresEventStore);
    expect(s.kind).toBe('postgres');
    const t0 = Date.now();
    await expect(s.ping()).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(s.append('x', [ev('A')], { expectedRevision: 'any' })).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(s.readStream('x')).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(s.readAll()).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(s.headPosition()).rejects.toBeInstanceOf(StoreUnavailable);
    expect(Date.now() - t0).toBeLessThan(5_000);
    // A database that does not exist is unavailable too (it names the database).
    const missing = store({ connectionString: db.url.replace(/\/[^/]+$/, '/tollgate_no_such_db') });
    await expect(missing.ping()).rejects.toThrow(/tollgate_no_such_db/);
    await expect(missing.ping()).rejects.toBeInstanceOf(StoreUnavailable);
  });

  test('close() writes the appends it has already accepted', async () => {
    const s = store();
    const pending = s.append('x', evs(2), { expectedRevision: 'no_stream' });
    await s.close();
    await expect(pending).resolves.toEqual(expect.objectContaining({ nextExpectedRevision: 1n }));
    expect(await store().readStream('x')).toHaveLength(2);
  });
});
