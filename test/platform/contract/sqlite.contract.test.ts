/**
 * SQLite-only behaviour beyond the shared contract: opening, pragmas, ids reused across streams,
 * and a second connection to the same file (another process: a CLI, a second role).
 */
import type Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { openEventStore } from '../../../src/init';
import { StoreUnavailable, WrongExpectedVersion } from '../../../src/platform/eventstore/port';
import type { AppendResult, RecordedEvent } from '../../../src/platform/eventstore/port';
import { SqliteEventStore } from '../../../src/platform/eventstore/sqlite';
import { Collector, ev, evs } from './support/adapters';

let dir: string;
const open: SqliteEventStore[] = [];
const store = (file = join(dir, 'events.sqlite')) => {
  const s = new SqliteEventStore({ file, pollIntervalMs: 10 });
  open.push(s);
  return s;
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-contract-'));
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

test('opens WAL with synchronous=FULL, creating missing directories', async () => {
  const s = store(join(dir, 'a', 'b', 'events.sqlite'));
  const db = (s as unknown as { db: Database.Database }).db;
  expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
  expect(db.pragma('synchronous', { simple: true })).toBe(2); // FULL
  await s.append('x', [ev('A')], { expectedRevision: 'no_stream' });
  expect(await s.readStream('x')).toHaveLength(1);
});

test('a directory that cannot be created fails at once with StoreUnavailable (no hang)', () => {
  const t0 = Date.now();
  expect(() => new SqliteEventStore({ file: '/proc/tollgate-nope/events.sqlite' })).toThrow(StoreUnavailable);
  expect(Date.now() - t0).toBeLessThan(2_000);
});

test('openEventStore puts the file at ${DATA_DIR}/events.sqlite', async () => {
  const s = openEventStore({ EVENT_STORE: 'sqlite', DATA_DIR: join(dir, 'data') });
  try {
    expect(s.kind).toBe('sqlite');
    await s.append('x', [ev('A')], { expectedRevision: 'no_stream' });
  } finally {
    await s.close();
  }
  const again = store(join(dir, 'data', 'events.sqlite'));
  expect(await again.readStream('x')).toHaveLength(1);
});

test('an id already stored in another stream is a conflict, and a batch is all or nothing', async () => {
  const s = store();
  const a = ev('A');
  await s.append('one', [a], { expectedRevision: 'no_stream' });
  await expect(s.append('two', [a], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(WrongExpectedVersion);
  await expect(s.append('two', [ev('B'), a], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(WrongExpectedVersion);
  await expect(s.append('one', [ev('C'), a], { expectedRevision: 0n })).rejects.toBeInstanceOf(WrongExpectedVersion);
  expect(await s.readStream('two')).toEqual([]);
  expect((await s.readStream('one')).map((e) => e.id)).toEqual([a.id]);
  // A partial re-send of an earlier batch is a conflict too.
  const batch = evs(3);
  await s.append('three', batch, { expectedRevision: 'no_stream' });
  await expect(s.append('three', batch.slice(0, 2), { expectedRevision: 'no_stream' })).resolves.toEqual(
    expect.objectContaining({ nextExpectedRevision: 1n }),
  );
  await expect(s.append('three', [batch[0], ev('D')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(WrongExpectedVersion);
  expect(await s.readStream('three')).toHaveLength(3);
});

test('group commit: appends of one turn share a transaction, yet each succeeds or fails on its own', async () => {
  const s = store();
  const a = ev('A');
  const b = ev('B');
  const c = evs(2);
  const d = ev('D');
  const results = await Promise.allSettled([
    s.append('g1', [a], { expectedRevision: 'no_stream' }),
    s.append('g1', [b], { expectedRevision: 'no_stream' }), // sees A from the same batch: conflict
    s.append('g2', c, { expectedRevision: 'no_stream' }),
    s.append('g2', [d, c[0]], { expectedRevision: 1n }), // reuses an id: conflict, nothing of it stays
    s.append('g1', [ev('E')], { expectedRevision: 0n }),
  ]);
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
  const wrong = results[1] as PromiseRejectedResult;
  expect(wrong.reason).toBeInstanceOf(WrongExpectedVersion);
  expect((wrong.reason as WrongExpectedVersion).actual).toBe(0n);
  expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedVersion);
  expect((await s.readStream('g1')).map((e) => e.type)).toEqual(['A', 'E']);
  expect((await s.readStream('g2')).map((e) => e.id)).toEqual(c.map((e) => e.id));
  const fulfilled = results.filter((r): r is PromiseFulfilledResult<AppendResult> => r.status === 'fulfilled');
  const positions = fulfilled.map((r) => r.value.position);
  expect(positions).toEqual([...positions].sort((x, y) => (x < y ? -1 : 1)));
  expect(await s.headPosition()).toBe(positions[positions.length - 1]);
});

test('an append leaves for the writer before the loop turns; subscriptions wake only after its caller went on', async () => {
  const s = store();
  await s.append('warm', [ev('W')], { expectedRevision: 'no_stream' }); // the writer thread is up
  const sub = s.subscribeToAll({ after: await s.headPosition() });
  const it = sub[Symbol.asyncIterator]();
  let seen: RecordedEvent | undefined;
  const next = it.next().then((r) => (seen = r.value as RecordedEvent));
  await new Promise((r) => setImmediate(r)); // the subscription has read nothing and waits
  const post = jest.spyOn(Worker.prototype, 'postMessage');
  try {
    const appended = s.append('x', [ev('A')], { expectedRevision: 'no_stream' });
    // Microtasks only, no turn of the loop: the batch is already with the writer thread, so its
    // COMMIT runs beside whatever the caller does next (the upstream call on the inference path).
    await null;
    await null;
    expect(post).toHaveBeenCalledWith(expect.objectContaining({ type: 'append' }));
    await appended;
    // The caller goes on (on the inference path: its first byte) before the subscription reads the row.
    for (let i = 0; i < 20; i++) await null;
    expect(seen).toBeUndefined();
    await next;
    expect(seen?.type).toBe('A');
  } finally {
    post.mockRestore();
    await sub.close();
  }
});

test('close() writes the appends it has already accepted', async () => {
  const file = join(dir, 'events.sqlite');
  const s = store(file);
  const pending = s.append('x', evs(2), { expectedRevision: 'no_stream' });
  await s.close();
  await expect(pending).resolves.toEqual(expect.objectContaining({ nextExpectedRevision: 1n }));
  expect(await store(file).readStream('x')).toHaveLength(2);
  await expect(s.append('x', evs(1), { expectedRevision: 1n })).rejects.toBeInstanceOf(StoreUnavailable);
});

test('a second connection to the same file: its appends reach a subscription, conflicts are detected', async () => {
  const first = store();
  const second = store();
  await first.append('s', [ev('A')], { expectedRevision: 'no_stream' });
  const sub = first.subscribeToAll({ after: await first.headPosition() });
  const c = new Collector(sub, () => true);
  const b = evs(2);
  await second.append('s', b, { expectedRevision: 0n });
  expect((await c.take(2)).map((e) => e.id)).toEqual(b.map((e) => e.id));
  await expect(first.append('s', [ev('C')], { expectedRevision: 0n })).rejects.toBeInstanceOf(WrongExpectedVersion);
  expect(await c.quiet(100)).toEqual([]);
  await sub.close();
  expect(await c.ended()).toBe(true);
});
