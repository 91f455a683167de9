/**
 * EventStoreDB failure handling that the shared contract cannot provoke on demand:
 * - an unreachable server (a real client pointed at a closed port: no server needed);
 * - dropped subscriptions, resubscribe with backoff, unavailability (the adapter over the fake client).
 */
import type { Position } from '@eventstore/db-client';
import { TimeoutError } from '@eventstore/db-client';
import { EsdbEventStore } from '../../../src/platform/eventstore/esdb';
import { StoreUnavailable } from '../../../src/platform/eventstore/port';
import { Collector, ev, evs, overFakeEach } from './support/adapters';
import { sleep, until } from '../../support/wait';

describe('EventStoreDB unreachable (esdb://127.0.0.1:1?tls=false)', () => {
  test('append, reads, headPosition and ping reject with StoreUnavailable, quickly', async () => {
    const drops: unknown[] = [];
    const store = new EsdbEventStore({
      connectionString: 'esdb://127.0.0.1:1?tls=false&defaultDeadline=2000',
      operationTimeoutMs: 3_000,
      resubscribeDelayMs: 20,
      onSubscriptionDropped: (err) => drops.push(err),
    });
    const t0 = Date.now();
    try {
      // append fails with a raw gRPC error (code 14) in the client; reads with UnavailableError.
      await expect(store.append('x-1', [ev('A')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.append('x-1', [ev('A')], { expectedRevision: 3n })).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.readStream('x-1')).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.readAll({ maxCount: 10 })).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.headPosition()).rejects.toBeInstanceOf(StoreUnavailable);
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailable);

      // A subscription keeps retrying (reporting each drop) until it is closed.
      const sub = store.subscribeToAll({ after: 10n });
      const next = sub[Symbol.asyncIterator]().next();
      await until(() => drops.length >= 2, 3_000);
      expect(drops[0]).toBeInstanceOf(StoreUnavailable);
      await sub.close();
      await expect(next).resolves.toEqual({ done: true, value: undefined });
    } finally {
      await store.close();
    }
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});

describe('EsdbEventStore over the fake client: drops and unavailability', () => {
  // A failed append reads itself back while the server is down, for readBackTimeoutMs: short here.
  const t = overFakeEach({ resubscribeDelayMs: 10, maxResubscribeDelayMs: 40, readBackTimeoutMs: 100 });

  test('a dropped subscription resubscribes from the last delivered position: no gap, no repeat', async () => {
    const s = `${t.ns}-s`;
    const ids: string[] = [];
    const append = async (n: number) => {
      const batch = evs(n);
      await t.store.append(s, batch, { expectedRevision: 'any' });
      ids.push(...batch.map((e) => e.id));
    };
    await append(3);
    await append(2);
    const sub = t.store.subscribeToAll();
    const c = new Collector(sub, t.mine);
    const got = await c.take(5);

    // Connection lost, then events written while the subscription waits to come back.
    t.fake.dropSubscriptions();
    await append(2);
    await append(1);
    got.push(...(await c.take(3)));
    // Resubscribed from the exact position of the last record it had received.
    const resumedFrom = t.fake.subscribeCalls[1] as Position;
    expect(resumedFrom.commit).toBe(resumedFrom.prepare);
    expect(resumedFrom.commit >= got[4].position && resumedFrom.commit < got[5].position).toBe(true);

    // The server ends the call without an error; then it drops a slow consumer (ABORTED).
    t.fake.endSubscriptions();
    await append(1);
    got.push(...(await c.take(1)));
    t.fake.dropSubscriptions(new TimeoutError(undefined, 'consumer too slow'));
    await append(3);
    got.push(...(await c.take(3)));

    expect(got.map((e) => e.id)).toEqual(ids);
    expect(await c.quiet(200)).toEqual([]);
    expect(t.fake.subscribeCalls).toHaveLength(4);
    // A slow consumer dropped with ABORTED (TimeoutError) is unavailability too, and is waited out.
    expect(t.drops.map((d) => (d.err as Error).constructor.name)).toEqual(['StoreUnavailable', 'StoreUnavailable', 'StoreUnavailable']);
    expect((t.drops[2].err as Error).cause).toBeInstanceOf(TimeoutError);
    // Each drop after a successful resubscription starts the backoff again.
    expect(t.drops.map((d) => d.delayMs)).toEqual([10, 10, 10]);
    await sub.close();
    expect(await c.ended()).toBe(true);
  });

  test('while the server is down it backs off (doubling, capped) and resumes when it is back', async () => {
    const s = `${t.ns}-b`;
    const before = evs(2);
    await t.store.append(s, before, { expectedRevision: 'no_stream' });
    const sub = t.store.subscribeToAll();
    const c = new Collector(sub, t.mine);
    await c.take(2);

    t.fake.unavailable = true;
    t.fake.dropSubscriptions();
    // The subscription is pulled lazily: keep a read pending so it notices the drop.
    const pending = c.take(2, 5_000);
    await until(() => t.drops.length >= 5, 3_000);
    expect(t.drops.slice(0, 5).map((d) => d.delayMs)).toEqual([10, 20, 40, 40, 40]);
    expect(t.drops.every((d) => d.err instanceof StoreUnavailable)).toBe(true);
    // Writes and reads fail meanwhile, as StoreUnavailable.
    await expect(t.store.append(s, [ev('X')], { expectedRevision: 1n })).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(t.store.readStream(s)).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(t.store.readAll()).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(t.store.headPosition()).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(t.store.ping()).rejects.toBeInstanceOf(StoreUnavailable);

    t.fake.unavailable = false;
    const after = evs(2);
    await t.store.append(s, after, { expectedRevision: 1n });
    expect((await pending).map((e) => e.id)).toEqual(after.map((e) => e.id));
    expect(await c.quiet(100)).toEqual([]);
    await sub.close();
  });

  test('closing a subscription that waits to resubscribe ends it at once', async () => {
    t.fake.unavailable = true;
    const slow = new EsdbEventStore({ client: t.fake as never, resubscribeDelayMs: 60_000 });
    const sub = slow.subscribeToAll();
    const next = sub[Symbol.asyncIterator]().next();
    await sleep(50);
    const t0 = Date.now();
    await sub.close();
    await expect(next).resolves.toEqual({ done: true, value: undefined });
    // "At once" against a 60 s resubscribe delay: milliseconds when quiet, room for stalls under load.
    expect(Date.now() - t0).toBeLessThan(10_000);
    await slow.close();
  });

  test('close() ends open subscriptions', async () => {
    const sub = t.store.subscribeToAll();
    const c = new Collector(sub, () => true);
    await t.store.append(`${t.ns}-x`, [ev('A')], { expectedRevision: 'no_stream' });
    await c.take(1);
    await t.store.close();
    expect(await c.ended()).toBe(true);
    expect(t.fake.liveSubscriptions).toBe(0);
  });
});
