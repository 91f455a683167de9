/**
 * An append whose outcome is unknown: the connection drops after the request was sent. The adapter
 * reads its events back before it answers: landed → the append's result (the caller gets what it paid
 * for); not landed → StoreUnavailable and nothing written. The network is a relay that cuts the
 * connection right after the server committed (the reply is lost) or right before the request reaches it.
 */
import { EsdbEventStore } from '../../../src/platform/eventstore/esdb';
import { PostgresEventStore } from '../../../src/platform/eventstore/postgres';
import { EventStore, StoreUnavailable } from '../../../src/platform/eventstore/port';
import { CutRelay } from '../../support/cut-relay';
import { EsdbGrpcServer, startEsdbGrpcServer } from '../../support/esdb-grpc-server';
import { createTestDatabase, TEST_DATABASE_URL, TestDatabase } from '../../support/postgres';
import { ev } from './support/adapters';

async function landsAfterCut(store: EventStore, direct: EventStore, relay: CutRelay, stream: string) {
  await store.append(`${stream}-warm`, [ev('Warm')], { expectedRevision: 'no_stream' });
  const first = ev('Requested');
  await store.append(stream, [first], { expectedRevision: 'no_stream' });

  relay.arm('after-commit');
  const paid = [ev('Completed'), ev('Debited')];
  const result = await store.append(stream, paid, { expectedRevision: 0n });
  expect(relay.cuts).toBe(1);
  const stored = await direct.readStream(stream);
  expect(stored.map((e) => e.id)).toEqual([first.id, ...paid.map((e) => e.id)]);
  expect(result.nextExpectedRevision).toBe(2n);
  expect(result.position).toBe(stored[2].position);

  relay.arm('before-send');
  const lost = ev('NeverSent');
  await expect(store.append(stream, [lost], { expectedRevision: 2n })).rejects.toBeInstanceOf(StoreUnavailable);
  expect(relay.cuts).toBe(2);
  expect((await direct.readStream(stream)).map((e) => e.id)).not.toContain(lost.id);
  // And the store still works: the same append, re-sent, lands once.
  await store.append(stream, [lost], { expectedRevision: 2n });
  expect((await direct.readStream(stream)).map((e) => e.id)).toEqual([first.id, ...paid.map((e) => e.id), lost.id]);
}

const maybePg = TEST_DATABASE_URL ? describe : describe.skip;

maybePg('PostgreSQL: an append cut after COMMIT', () => {
  let db: TestDatabase;
  let relay: CutRelay;
  const open: EventStore[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    await relay?.close();
    await db?.drop();
  });

  test.each([true, false])('is read back before it answers (group commit: %s)', async (groupCommit) => {
    db = await createTestDatabase('outcome');
    const target = new URL(db.url);
    relay = new CutRelay({ host: target.hostname, port: Number(target.port || 5432) });
    await relay.listen();
    const via = new URL(db.url);
    via.host = `127.0.0.1:${relay.port}`;
    const store = new PostgresEventStore({ connectionString: via.toString(), groupCommit, readBackTimeoutMs: 10_000 });
    const direct = new PostgresEventStore({ connectionString: db.url });
    open.push(store, direct);
    await landsAfterCut(store, direct, relay, 'inference-pg');
  });
});

describe('EventStoreDB (gRPC test server): an append cut after the write', () => {
  let srv: EsdbGrpcServer;
  let relay: CutRelay;
  const open: EventStore[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    await relay?.close();
    await srv?.stop();
  });

  test('is read back before it answers', async () => {
    srv = await startEsdbGrpcServer();
    relay = new CutRelay({ host: '127.0.0.1', port: srv.port }, 'h2');
    await relay.listen();
    const store = new EsdbEventStore({
      connectionString: `esdb://127.0.0.1:${relay.port}?tls=false`,
      operationTimeoutMs: 3_000,
      readBackTimeoutMs: 10_000,
    });
    const direct = new EsdbEventStore({ connectionString: srv.connectionString, operationTimeoutMs: 3_000 });
    open.push(store, direct);
    await landsAfterCut(store, direct, relay, `inference-esdb-${Date.now()}`);
  });
});
