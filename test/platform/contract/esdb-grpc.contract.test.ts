/**
 * EventStoreDB over the wire: the real @eventstore/db-client against the gRPC test server
 * (test/support/esdb-grpc-server), for the faults the shared contract cannot provoke: a server killed
 * and restarted under a live subscription and a writer, a follower that redirects to the leader, a
 * server that stops answering reads.
 */
import { EsdbEventStore } from '../../../src/platform/eventstore/esdb';
import { StoreUnavailable } from '../../../src/platform/eventstore/port';
import type { AppendResult, NewEvent, RecordedEvent } from '../../../src/platform/eventstore/port';
import { EsdbGrpcServer, EsdbLog, startEsdbGrpcServer } from '../../support/esdb-grpc-server';
import { Collector, ev, namespace } from './support/adapters';
import { sleep } from '../../support/wait';

const open: { close(): Promise<void> }[] = [];
const servers: EsdbGrpcServer[] = [];

async function server(opts: Parameters<typeof startEsdbGrpcServer>[0] = {}): Promise<EsdbGrpcServer> {
  const s = await startEsdbGrpcServer(opts);
  servers.push(s);
  return s;
}

function store(connectionString: string, opts: Partial<ConstructorParameters<typeof EsdbEventStore>[0] & object> = {}): EsdbEventStore {
  const s = new EsdbEventStore({
    connectionString,
    resubscribeDelayMs: 50,
    maxResubscribeDelayMs: 400,
    operationTimeoutMs: 3_000,
    ...opts,
  });
  open.push(s);
  return s;
}

afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  for (const s of servers.splice(0)) await s.stop();
});

test('killed and restarted under a live subscription and a writer: every event arrives once, in order, none written twice', async () => {
  const srv = await server();
  const drops: unknown[] = [];
  const es = store(srv.connectionString, { onSubscriptionDropped: (err) => drops.push(err) });
  const ns = namespace();
  const s = `${ns}-k`;
  const mine = (e: RecordedEvent) => e.stream === s;
  await es.append(s, [ev('First')], { expectedRevision: 'no_stream' });
  const sub = es.subscribeToAll({ after: await es.headPosition() });
  const c = new Collector(sub, mine);

  // A writer that retries each append with the SAME ids and expected revision until it lands: an
  // append cut by the kill has an unknown outcome, and the retry must not write it twice.
  const written: string[] = [];
  let unavailable = 0;
  let stop = false;
  const writer = (async () => {
    let last: AppendResult | null = null;
    for (let i = 0; !stop && i < 400; i++) {
      const batch: NewEvent[] = i % 3 === 0 ? [ev('Tick', { i }), ev('Tock', { i })] : [ev('Tick', { i })];
      const expectedRevision = last ? last.nextExpectedRevision : 0n;
      for (;;) {
        try {
          last = await es.append(s, batch, { expectedRevision });
          break;
        } catch (err) {
          if (!(err instanceof StoreUnavailable)) throw err;
          unavailable++;
          await sleep(50);
        }
      }
      written.push(...batch.map((e) => e.id));
      await sleep(2);
    }
  })();

  const got: RecordedEvent[] = [];
  got.push(...(await c.take(20, 15_000)));
  srv.kill();
  await sleep(400); // the writer and the subscription both see the server gone
  await srv.restart();
  got.push(...(await c.take(20, 20_000)));
  stop = true;
  await writer;
  got.push(...(await c.take(written.length - got.length, 20_000)));
  expect(await c.quiet(300)).toEqual([]);
  expect(got.map((e) => e.id)).toEqual(written);
  const stored = await es.readStream(s);
  expect(stored.map((e) => e.id)).toEqual([stored[0].id, ...written]);
  expect(unavailable).toBeGreaterThan(0);
  expect(drops.length).toBeGreaterThan(0);
  expect(drops.every((d) => d instanceof StoreUnavailable)).toBe(true);
  await sub.close();
}, 90_000);

test('a follower redirects leader calls: the client reconnects to the leader and the adapter retries once', async () => {
  const log = new EsdbLog();
  const leader = await server({ log });
  const follower = await server({ log, role: 'follower', leader: { host: '127.0.0.1', port: leader.port } });
  const es = store(follower.connectionString);
  const ns = namespace();
  const s = `${ns}-l`;
  // Appends in flight together: the follower fails the whole batch-append call, so every one of
  // them gets the NotLeader, and each is retried once on the leader.
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) => es.append(i === 0 ? s : `${ns}-c${i}`, [ev('A')], { expectedRevision: 'no_stream' })),
  );
  expect(results.map((r) => r.nextExpectedRevision)).toEqual(Array(8).fill(0n));
  expect(follower.calls.some((c) => c.method === 'batchAppend' && c.requiresLeader)).toBe(true);
  expect(leader.calls.some((c) => c.method === 'batchAppend' && c.requiresLeader)).toBe(true);
  // Now on the leader: decision reads ask for it too.
  expect((await es.readStream(s)).map((e) => e.type)).toEqual(['A']);
  expect(leader.calls.filter((c) => c.method === 'readStream').every((c) => c.requiresLeader)).toBe(true);
});

test('a follower with no reachable leader: StoreUnavailable, not a hang or a raw error', async () => {
  const follower = await server({ role: 'follower', leader: { host: '127.0.0.1', port: 1 } });
  const es = store(follower.connectionString);
  await expect(es.append(`${namespace()}-x`, [ev('A')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(StoreUnavailable);
});

test('a server that stops answering reads: StoreUnavailable after the read timeout, then reads work again', async () => {
  const srv = await server();
  const es = store(srv.connectionString, { readTimeoutMs: 300 });
  const s = `${namespace()}-h`;
  await es.append(s, [ev('A')], { expectedRevision: 'no_stream' });
  srv.hangReads = true;
  const t0 = Date.now();
  await expect(es.readStream(s)).rejects.toBeInstanceOf(StoreUnavailable);
  await expect(es.readAll({ maxCount: 5 })).rejects.toBeInstanceOf(StoreUnavailable);
  await expect(es.headPosition()).rejects.toBeInstanceOf(StoreUnavailable);
  expect(Date.now() - t0).toBeLessThan(5_000);
  srv.hangReads = false;
  expect(await es.readStream(s)).toHaveLength(1);
});

test('appends carry their deadline to the server: a write it cannot finish in time is StoreUnavailable, with nothing written', async () => {
  const srv = await server();
  const es = store(srv.connectionString, { operationTimeoutMs: 400 });
  const s = `${namespace()}-w`;
  await es.append(s, [ev('A')], { expectedRevision: 'no_stream' });
  srv.stallWrites = true;
  const t0 = Date.now();
  const err = await es.append(s, [ev('B')], { expectedRevision: 0n }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreUnavailable);
  // The server's own answer (client DeadlineExceededError), not just our backstop timer.
  expect(((err as Error).cause as { type?: string }).type).toBe('deadline-exceeded');
  // The cause above already tells the server's deadline (400 ms) from our backstop (1.4 s); the time
  // only shows no hang, with room for stalls under load.
  expect(Date.now() - t0).toBeLessThan(5_000);
  srv.stallWrites = false;
  expect((await es.readStream(s)).map((e) => e.type)).toEqual(['A']);
  await es.append(s, [ev('B')], { expectedRevision: 0n });
});

test('a server that is down: StoreUnavailable at once; after it restarts the same client works again', async () => {
  const srv = await server();
  const es = store(srv.connectionString);
  const s = `${namespace()}-d`;
  await es.append(s, [ev('A')], { expectedRevision: 'no_stream' });
  srv.kill();
  await expect(es.append(s, [ev('B')], { expectedRevision: 0n })).rejects.toBeInstanceOf(StoreUnavailable);
  await expect(es.readStream(s)).rejects.toBeInstanceOf(StoreUnavailable);
  await expect(es.ping()).rejects.toBeInstanceOf(StoreUnavailable);
  await srv.restart();
  await es.append(s, [ev('B')], { expectedRevision: 0n });
  expect((await es.readStream(s)).map((e) => e.type)).toEqual(['A', 'B']);
});
