/**
 * The EventStoreDB adapter matched to the server: each case is a way the adapter once differed from
 * what the server (kurrent-io/KurrentDB) and the 6.2.1 client really do. Most run the adapter over the
 * in-process fake client (which encodes those facts and can inject faults); discovery runs the real
 * client against addresses where nothing listens.
 */
import { Metadata } from '@grpc/grpc-js';
import { NotLeaderError, TimeoutError, UnavailableError, UnknownError } from '@eventstore/db-client';
import { EsdbEventStore } from '../../../src/platform/eventstore/esdb';
import { StoreUnavailable, WrongExpectedVersion } from '../../../src/platform/eventstore/port';
import type { RecordedEvent } from '../../../src/platform/eventstore/port';
import { Collector, ev, evs, overFake } from './support/adapters';
import { sleep } from '../../support/wait';
import { FakeEsdbClient } from './support/fake-esdb-client';

function notLeader(): NotLeaderError {
  const md = new Metadata();
  md.set('exception', 'not-leader');
  md.set('leader-endpoint-host', '127.0.0.1');
  md.set('leader-endpoint-port', '2113');
  return new NotLeaderError({ code: 5, details: 'Leader info available', metadata: md, message: '5 NOT_FOUND: Leader info available' } as never);
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
}

describe('discovery failure (multi-node or esdb+discover, nothing reachable) is StoreUnavailable', () => {
  const strings = [
    'esdb://127.0.0.1:1,127.0.0.1:2?tls=false&maxDiscoverAttempts=1&discoveryInterval=10&gossipTimeout=1',
    'esdb+discover://127.0.0.1:1?tls=false&maxDiscoverAttempts=2&discoveryInterval=10&gossipTimeout=1',
  ];
  test.each(strings)('%s', async (connectionString) => {
    const drops: unknown[] = [];
    const store = new EsdbEventStore({ connectionString, resubscribeDelayMs: 20, onSubscriptionDropped: (err) => drops.push(err) });
    try {
      await expect(store.append('x-1', [ev('A')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.readStream('x-1')).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.readAll({ maxCount: 1 })).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.headPosition()).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailable);
      const sub = store.subscribeToAll();
      const next = sub[Symbol.asyncIterator]().next();
      for (let i = 0; i < 200 && drops.length === 0; i++) await sleep(10);
      expect(drops[0]).toBeInstanceOf(StoreUnavailable);
      await sub.close();
      await expect(next).resolves.toEqual({ done: true, value: undefined });
    } finally {
      await store.close();
    }
  });
});

describe('EsdbEventStore over the fake client, matched to the server', () => {
  let fake: FakeEsdbClient;
  let store: EsdbEventStore;
  let drops: { err: unknown; delayMs: number }[];
  let ns: string;
  const mine = (e: RecordedEvent) => e.stream.startsWith(`${ns}-`);

  let cleanup: () => Promise<void>;

  beforeEach(() => {
    ({ fake, store, drops, ns, cleanup } = overFake({ resubscribeDelayMs: 10, maxResubscribeDelayMs: 80, readTimeoutMs: 300 }));
  });
  afterEach(() => cleanup());

  test('a subscription error after the confirmation reaches the caller instead of looping', async () => {
    const s = `${ns}-s`;
    await store.append(s, evs(2), { expectedRevision: 'no_stream' });
    const [first] = await store.readStream(s);
    // Inside a record: the server confirms, then fails with InvalidArgument (client: UnknownError).
    const sub = store.subscribeToAll({ after: first.position + 1n });
    const err = await rejection(sub[Symbol.asyncIterator]().next());
    expect(err).not.toBeInstanceOf(StoreUnavailable);
    expect(String((err as Error).message)).toMatch(/position/i);
    expect(fake.subscribeCalls).toHaveLength(1);
    expect(drops).toEqual([]);
    await sub.close();
  });

  test('the backoff does not reset on a confirmation alone: a server that confirms then drops is retried ever slower', async () => {
    fake.failAfterConfirmation = new UnavailableError(undefined, 'fake: dropped right after confirming');
    const sub = store.subscribeToAll();
    const next = sub[Symbol.asyncIterator]().next();
    for (let i = 0; i < 300 && drops.length < 5; i++) await sleep(5);
    expect(drops.slice(0, 5).map((d) => d.delayMs)).toEqual([10, 20, 40, 80, 80]);
    // Once it delivers events again, the next drop starts from the first delay.
    fake.failAfterConfirmation = null;
    await store.append(`${ns}-b`, [ev('A')], { expectedRevision: 'no_stream' });
    await expect(next).resolves.toEqual(expect.objectContaining({ done: false }));
    const c = new Collector(sub, mine);
    const before = drops.length;
    fake.dropSubscriptions();
    await store.append(`${ns}-b`, [ev('B')], { expectedRevision: 0n });
    await c.take(1);
    expect(drops.slice(before).map((d) => d.delayMs)).toEqual([10]);
    await sub.close();
  });

  test('reads have their own timeout: a server that never answers gives StoreUnavailable, not a hang', async () => {
    await store.append(`${ns}-r`, evs(2), { expectedRevision: 'no_stream' });
    fake.hangReads = true;
    const t0 = Date.now();
    await expect(store.readStream(`${ns}-r`)).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(store.readAll()).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(store.headPosition()).rejects.toBeInstanceOf(StoreUnavailable);
    // Three reads of a 300 ms timeout each, not a hang; room for stalls under load.
    expect(Date.now() - t0).toBeLessThan(10_000);
    fake.hangReads = false;
    expect(await store.readStream(`${ns}-r`)).toHaveLength(2);
  });

  test('a position inside a record is refused by readAll (as the server does), with a clear error', async () => {
    const s = `${ns}-p`;
    await store.append(s, evs(3), { expectedRevision: 'no_stream' });
    const [, second] = await store.readStream(s);
    // The fake itself refuses it the way the server does…
    const raw = fake.readAll({ fromPosition: { commit: second.position + 1n, prepare: second.position + 1n }, maxCount: 1 });
    const rawErr = await rejection((async () => {
      for await (const _ of raw) void _;
    })());
    expect(rawErr).toBeInstanceOf(UnknownError);
    // …and the adapter says what is wrong.
    const err = await rejection(store.readAll({ fromPosition: second.position + 1n }));
    expect(err).toBeInstanceOf(RangeError);
    expect((err as Error).message).toMatch(/not the position of an event/);
    expect((await store.readAll({ fromPosition: second.position })).filter(mine)).toHaveLength(2);
  });

  test('decision reads and appends ask for the leader, and a NotLeader is retried once', async () => {
    const s = `${ns}-l`;
    fake.failNext('appendToStream', notLeader());
    const r = await store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
    expect(r.nextExpectedRevision).toBe(0n);
    fake.failNext('readStream', notLeader());
    expect(await store.readStream(s)).toHaveLength(1);
    const appends = fake.calls.filter((c) => c.op === 'appendToStream');
    const reads = fake.calls.filter((c) => c.op === 'readStream');
    expect(appends.length).toBeGreaterThanOrEqual(2);
    expect(appends.every((c) => c.options.requiresLeader === true)).toBe(true);
    expect(reads.every((c) => c.options.requiresLeader === true)).toBe(true);
    // Twice in a row: the store is unavailable for now.
    fake.failNext('appendToStream', notLeader());
    fake.failNext('appendToStream', notLeader());
    await expect(store.append(s, [ev('B')], { expectedRevision: 0n })).rejects.toBeInstanceOf(StoreUnavailable);
  });

  test('a TimeoutError (ABORTED) counts as unavailable', async () => {
    fake.failNext('appendToStream', new TimeoutError(undefined, '10 ABORTED: Operation timed out'));
    await expect(store.append(`${ns}-t`, [ev('A')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(StoreUnavailable);
    fake.failNext('readStream', new TimeoutError(undefined, '10 ABORTED: Operation timed out'));
    await expect(store.readStream(`${ns}-t`)).rejects.toBeInstanceOf(StoreUnavailable);
  });

  test('a multi-event append uses the position the server returned (no read-back); an empty append is refused', async () => {
    const s = `${ns}-m`;
    await store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
    await store.readStream(s); // what a command handler does before deciding
    fake.calls.length = 0;
    const r = await store.append(s, evs(3), { expectedRevision: 0n });
    expect(fake.calls.map((c) => c.op)).toEqual(['appendToStream']);
    const last = (await store.readStream(s, { direction: 'backwards', maxCount: 1 }))[0];
    expect(r).toEqual({ nextExpectedRevision: 3n, position: last.position });

    fake.calls.length = 0;
    await expect(store.append(s, [], { expectedRevision: 3n })).rejects.toThrow(TypeError);
    await expect(store.append(`${ns}-e`, [], { expectedRevision: 'any' })).rejects.toThrow(TypeError);
    expect(fake.calls).toEqual([]);
  });

  test("client errors are classified by err.type, not by class (another client's errors map the same)", async () => {
    fake.foreignErrors = true;
    const s = `${ns}-f`;
    await store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
    const err = await rejection(store.append(s, [ev('B')], { expectedRevision: 5n }));
    expect(err).toBeInstanceOf(WrongExpectedVersion);
    expect((err as WrongExpectedVersion).actual).toBe(0n);
    expect(await store.readStream(`${ns}-missing`)).toEqual([]);
    fake.failNext('appendToStream', notLeader());
    await expect(store.append(s, [ev('C')], { expectedRevision: 0n })).resolves.toEqual(expect.objectContaining({ nextExpectedRevision: 1n }));
    fake.failNext('readAll', new UnavailableError(undefined, 'down'));
    await expect(store.readAll()).rejects.toBeInstanceOf(StoreUnavailable);
    fake.failNext('appendToStream', new TimeoutError(undefined, 'aborted'));
    await expect(store.append(s, [ev('D')], { expectedRevision: 1n })).rejects.toBeInstanceOf(StoreUnavailable);
  });

  test('re-sent ids under `any` are recognised even after the server forgot them (its id cache is best effort)', async () => {
    const s = `${ns}-a`;
    const batch = evs(2);
    const first = await store.append(s, batch, { expectedRevision: 'any' });
    await store.append(s, [ev('C')], { expectedRevision: 'any' });
    fake.forgetIds(); // eviction or restart: the server alone would write the batch again
    const again = new EsdbEventStore({ client: fake as never }); // a process that never read the stream
    try {
      expect(await again.append(s, batch, { expectedRevision: 'any' })).toEqual(first);
      expect(await again.append(s, batch, { expectedRevision: 'stream_exists' })).toEqual(first);
      await expect(again.append(s, [batch[1]], { expectedRevision: 2n })).rejects.toBeInstanceOf(WrongExpectedVersion);
    } finally {
      await again.close();
    }
    expect((await store.readStream(s)).map((e) => e.type)).toEqual(['Thing', 'Thing', 'C']);
  });
});
