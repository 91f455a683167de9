/**
 * The SQLite adapter's writer thread: a COMMIT that waits (here on another connection's write lock,
 * in production on the disk's fsync) never blocks the event loop, and a read sees the appends to its
 * stream that are still with the writer.
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '../../../src/platform/eventstore/sqlite';

let dir: string;
let store: SqliteEventStore;
const ev = (type = 'Happened') => ({ id: randomUUID(), type, data: { at: type } });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-writer-'));
  store = new SqliteEventStore({ file: join(dir, 'events.sqlite') });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

test('an append that waits for the write lock leaves the event loop free, and lands once the lock is gone', async () => {
  await store.append('warm', [ev()], { expectedRevision: 'no_stream' }); // the writer thread is up
  const blocker = new Database(join(dir, 'events.sqlite'));
  blocker.pragma('journal_mode = WAL');
  blocker.exec('BEGIN IMMEDIATE');
  try {
    const pending = store.append('s', [ev('A')], { expectedRevision: 'no_stream' });
    // The writer now waits on the lock (busy_timeout 5 s); timers on this thread keep firing.
    const lags: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 20));
      lags.push(performance.now() - t0 - 20);
    }
    expect(Math.max(...lags)).toBeLessThan(1_000);
    blocker.exec('COMMIT');
    await expect(pending).resolves.toEqual(expect.objectContaining({ nextExpectedRevision: 0n }));
  } finally {
    if (blocker.inTransaction) blocker.exec('ROLLBACK');
    blocker.close();
  }
});

test('a read sees the appends to its stream that are still with the writer', async () => {
  const a = ev('A');
  const b = ev('B');
  const first = store.append('s', [a], { expectedRevision: 'no_stream' });
  const second = store.append('s', [b], { expectedRevision: 0n });
  // Called before either append was even sent to the writer thread.
  const read = await store.readStream('s');
  expect(read.map((e) => e.id)).toEqual([a.id, b.id]);
  await Promise.all([first, second]);
  // Other streams do not wait.
  expect(await store.readStream('other')).toEqual([]);
});

test('appends of one turn to one stream at the same revision: one lands, the others are refused', async () => {
  const results = await Promise.allSettled(
    [ev('A'), ev('B'), ev('C')].map((e) => store.append('s', [e], { expectedRevision: 'no_stream' })),
  );
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
  expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ name: 'WrongExpectedVersion', actual: 0n });
  expect((await store.readStream('s')).map((e) => e.type)).toEqual(['A']);
});

test('event data is serialized in one pass (a bigint is still refused, naming where it is)', async () => {
  let reads = 0;
  const data = {
    get amount() {
      reads += 1;
      return '5';
    },
  };
  await store.append('once', [{ id: randomUUID(), type: 'Counted', data }], { expectedRevision: 'no_stream' });
  expect(reads).toBe(1);
  expect((await store.readStream('once'))[0].data).toEqual({ amount: '5' });
  await expect(
    store.append('once', [{ id: randomUUID(), type: 'Money', data: { nested: { amount: 5n } } }], { expectedRevision: 0n }),
  ).rejects.toThrow('Money.data.nested.amount is a bigint');
});

test('the check before the trip to the writer reads the file only where this store committed past the expected revision', async () => {
  const stmts = (store as unknown as { stmts: { lastRevision: { get(s: string): unknown } } }).stmts;
  const reads: string[] = [];
  const get = stmts.lastRevision.get.bind(stmts.lastRevision);
  stmts.lastRevision.get = (s: string) => (reads.push(s), get(s));
  // The hot path: a new stream, then its next revision.
  await store.append('req-1', [ev('Requested')], { expectedRevision: 'no_stream' });
  await store.append('req-1', [ev('Completed')], { expectedRevision: 0n });
  expect(reads).toEqual([]);
  // Behind what this store committed: refused before the trip, after one read.
  await expect(store.append('req-1', [ev('Late')], { expectedRevision: 0n })).rejects.toMatchObject({ actual: 1n });
  await expect(store.append('req-1', [ev('Again')], { expectedRevision: 'no_stream' })).rejects.toMatchObject({ actual: 1n });
  expect(reads).toEqual(['req-1', 'req-1']);
  // An idempotent retry of committed ids still succeeds.
  const first = ev('Once');
  const r = await store.append('req-2', [first], { expectedRevision: 'no_stream' });
  await expect(store.append('req-2', [first], { expectedRevision: 'no_stream' })).resolves.toEqual(r);
});
