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
import { Collector, ev, evs, overFakeEach } from './support/adapters';
import { sleep } from '../../support/wait';

function notLeader(): NotLeaderError {
  const md = new Metadata();
  md.set('exception', 'not-leader');
  md.set('leader-endpoint-host', '127.0.0.1');
  md.set('leader-endpoint-port', '2113');
  return new NotLeaderError({
    code: 5,
    details: 'Leader info available',
    metadata: md,
    message: '5 NOT_FOUND: Leader info available',
  } as never);
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
  const t = overFakeEach({ resubscribeDelayMs: 10, maxResubscribeDelayMs: 80, readTimeoutMs: 300 });

  test('a subscription error after the confirmation reaches the caller instead of looping', async () => {
    const s = `${t.ns}-s`;
    await t.store.append(s, evs(2), { expectedRevision: 'no_stream' });
    const [first] = await t.store.readStream(s);
    // Inside a record: the server confirms, then fails with InvalidArgument (client: UnknownError).
    const sub = t.store.subscribeToAll({ after: first.position + 1n });
    const err = await rejection(sub[Symbol.asyncIterator]().next());
    expect(err).not.toBeInstanceOf(StoreUnavailable);
    expect(String((err as Error).message)).toMatch(/position/i);
    expect(t.fake.subscribeCalls).toHaveLength(1);
    expect(t.drops).toEqual([]);
    await sub.close();
  });

  test('the backoff does not reset on a confirmation alone: a server that confirms then drops is retried ever slower', async () => {
    t.fake.failAfterConfirmation = new UnavailableError(undefined, 'fake: dropped right after confirming');
    const sub = t.store.subscribeToAll();
    const next = sub[Symbol.asyncIterator]().next();
    for (let i = 0; i < 300 && t.drops.length < 5; i++) await sleep(5);
    expect(t.drops.slice(0, 5).map((d) => d.delayMs)).toEqual([10, 20, 40, 80, 80]);
    // Once it delivers events again, the next drop starts from the first delay.
    t.fake.failAfterConfirmation = null;
    await t.store.append(`${t.ns}-b`, [ev('A')], { expectedRevision: 'no_stream' });
    await expect(next).resolves.toEqual(expect.objectContaining({ done: false }));
    const c = new Collector(sub, t.mine);
    const before = t.drops.length;
    t.fake.dropSubscriptions();
    await t.store.append(`${t.ns}-b`, [ev('B')], { expectedRevision: 0n });
    await c.take(1);
    expect(t.drops.slice(before).map((d) => d.delayMs)).toEqual([10]);
    await sub.close();
  });

  test('reads have their own timeout: a server that never answers gives StoreUnavailable, not a hang', async () => {
    await t.store.append(`${t.ns}-r`, evs(2), { expectedRevision: 'no_stream' });
    t.fake.hangReads = true;
    const t0 = Date.now();
    await expect(t.store.readStream(`${t.ns}-r`)).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(t.store.readAll()).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(t.store.headPosition()).rejects.toBeInstanceOf(StoreUnavailable);
    // Three reads of a 300 ms timeout each, not a hang; room for stalls under load.
    expect(Date.now() - t0).toBeLessThan(10_000);
    t.fake.hangReads = false;
    expect(await t.store.readStream(`${t.ns}-r`)).toHaveLength(2);
  });

  test('a position inside a record is refused by readAll (as the server does), with a clear error', async () => {
    const s = `${t.ns}-p`;
    await t.store.append(s, evs(3), { expectedRevision: 'no_stream' });
    const [, second] = await t.store.readStream(s);
    // The fake itself refuses it the way the server does…
    const raw = t.fake.readAll({ fromPosition: { commit: second.position + 1n, prepare: second.position + 1n }, maxCount: 1 });
    const rawErr = await rejection(
      (async () => {
        for await (const _ of raw) void _;
      })(),
    );
    expect(rawErr).toBeInstanceOf(UnknownError);
    // …and the adapter says what is wrong.
    const err = await rejection(t.store.readAll({ fromPosition: second.position + 1n }));
    expect(err).toBeInstanceOf(RangeError);
    expect((err as Error).message).toMatch(/not the position of an event/);
    expect((await t.store.readAll({ fromPosition: second.position })).filter(t.mine)).toHaveLength(2);
  });

  test('decision reads and appends ask for the leader, and a NotLeader is retried once', async () => {
    const s = `${t.ns}-l`;
    t.fake.failNext('appendToStream', notLeader());
    const r = await t.store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
    expect(r.nextExpectedRevision).toBe(0n);
    t.fake.failNext('readStream', notLeader());
    expect(await t.store.readStream(s)).toHaveLength(1);
    const appends = t.fake.calls.filter((c) => c.op === 'appendToStream');
    const reads = t.fake.calls.filter((c) => c.op === 'readStream');
    expect(appends.length).toBeGreaterThanOrEqual(2);
    expect(appends.every((c) => c.options.requiresLeader === true)).toBe(true);
    expect(reads.every((c) => c.options.requiresLeader === true)).toBe(true);
    // Twice in a row: the store is unavailable for now.
    t.fake.failNext('appendToStream', notLeader());
    t.fake.failNext('appendToStream', notLeader());
    await expect(t.store.append(s, [ev('B')], { expectedRevision: 0n })).rejects.toBeInstanceOf(StoreUnavailable);
  });

  test('a TimeoutError (ABORTED) counts as unavailable', async () => {
    t.fake.failNext('appendToStream', new TimeoutError(undefined, '10 ABORTED: Operation timed out'));
    await expect(t.store.append(`${t.ns}-t`, [ev('A')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(StoreUnavailable);
    t.fake.failNext('readStream', new TimeoutError(undefined, '10 ABORTED: Operation timed out'));
    await expect(t.store.readStream(`${t.ns}-t`)).rejects.toBeInstanceOf(StoreUnavailable);
  });

  test('a multi-event append uses the position the server returned (no read-back); an empty append is refused', async () => {
    const s = `${t.ns}-m`;
    await t.store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
    await t.store.readStream(s); // what a command handler does before deciding
    t.fake.calls.length = 0;
    const r = await t.store.append(s, evs(3), { expectedRevision: 0n });
    expect(t.fake.calls.map((c) => c.op)).toEqual(['appendToStream']);
    const last = (await t.store.readStream(s, { direction: 'backwards', maxCount: 1 }))[0];
    expect(r).toEqual({ nextExpectedRevision: 3n, position: last.position });

    t.fake.calls.length = 0;
    await expect(t.store.append(s, [], { expectedRevision: 3n })).rejects.toThrow(TypeError);
    await expect(t.store.append(`${t.ns}-e`, [], { expectedRevision: 'any' })).rejects.toThrow(TypeError);
    expect(t.fake.calls).toEqual([]);
  });

  test("client errors are classified by err.type, not by class (another client's errors map the same)", async () => {
    t.fake.foreignErrors = true;
    const s = `${t.ns}-f`;
    await t.store.append(s, [ev('A')], { expectedRevision: 'no_stream' });
    const err = await rejection(t.store.append(s, [ev('B')], { expectedRevision: 5n }));
    expect(err).toBeInstanceOf(WrongExpectedVersion);
    expect((err as WrongExpectedVersion).actual).toBe(0n);
    expect(await t.store.readStream(`${t.ns}-missing`)).toEqual([]);
    t.fake.failNext('appendToStream', notLeader());
    await expect(t.store.append(s, [ev('C')], { expectedRevision: 0n })).resolves.toEqual(
      expect.objectContaining({ nextExpectedRevision: 1n }),
    );
    t.fake.failNext('readAll', new UnavailableError(undefined, 'down'));
    await expect(t.store.readAll()).rejects.toBeInstanceOf(StoreUnavailable);
    t.fake.failNext('appendToStream', new TimeoutError(undefined, 'aborted'));
    await expect(t.store.append(s, [ev('D')], { expectedRevision: 1n })).rejects.toBeInstanceOf(StoreUnavailable);
  });

  test('re-sent ids under `any` are recognised even after the server forgot them (its id cache is best effort)', async () => {
    const s = `${t.ns}-a`;
    const batch = evs(2);
    const first = await t.store.append(s, batch, { expectedRevision: 'any' });
    await t.store.append(s, [ev('C')], { expectedRevision: 'any' });
    t.fake.forgetIds(); // eviction or restart: the server alone would write the batch again
    const again = new EsdbEventStore({ client: t.fake as never }); // a process that never read the stream
    try {
      expect(await again.append(s, batch, { expectedRevision: 'any' })).toEqual(first);
      expect(await again.append(s, batch, { expectedRevision: 'stream_exists' })).toEqual(first);
      await expect(again.append(s, [batch[1]], { expectedRevision: 2n })).rejects.toBeInstanceOf(WrongExpectedVersion);
    } finally {
      await again.close();
    }
    expect((await t.store.readStream(s)).map((e) => e.type)).toEqual(['Thing', 'Thing', 'C']);
  });
});
