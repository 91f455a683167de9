/**
 * The whole service with EVENT_STORE=esdb, the real @eventstore/db-client talking gRPC to the
 * EventStoreDB test server (test/support/esdb-grpc-server): the money path, then the store killed
 * under it (503 with a detail, nothing served unmetered) and restarted (the projections resume with
 * no gap and no repeat, so balances equal a replay of the store).
 */
import { formatUsd } from '../../../src/platform/money';
import { describeStartupError } from '../../../src/main';
import { startTestServer, TestServer } from '../../support/harness';
import { EsdbGrpcServer, startEsdbGrpcServer } from '../../support/esdb-grpc-server';
import { api, attach, billing, deposit, newUser } from '../../billing/e2e/helpers';
import { eventually } from '../../support/wait';

let esdb: EsdbGrpcServer;
let server: TestServer;

beforeAll(async () => {
  esdb = await startEsdbGrpcServer();
  server = await startTestServer({ EVENT_STORE: 'esdb', EVENTSTORE_CONNECTION_STRING: esdb.connectionString });
});
afterAll(async () => {
  await server?.close();
  await esdb?.stop();
});

const ask = (secret: string, i: number) =>
  api(server)
    .post('/external/api/inference')
    .set('Authorization', `Bearer ${secret}`)
    .send({ context: [{ type: 'Human', text: `Hello number ${i}` }], config: 'service_3_productivity', max_tokens: 12 });

test('money path over gRPC, then the store dies and comes back: 503s while down, balances equal the store after', async () => {
  expect(server.services.store.kind).toBe('esdb');
  const u = await newUser(server, 'esdb');
  const ws = u.personalWs;
  expect((await attach(server, u, ws)).status).toBe(200);
  expect((await deposit(server, u, ws, '100')).status).toBe(201);
  const key = await api(server).post(`/v1/workspaces/${ws}/keys`).set(u.auth).send({ name: 'wire key' });
  expect(key.status).toBe(201);
  for (let i = 0; i < 3; i++) expect((await ask(key.body.secret, i)).status).toBe(200);

  // The store goes away: requests are refused with a detail, never served without being recorded.
  esdb.kill();
  const down = await ask(key.body.secret, 99);
  expect(down.status).toBe(503);
  expect(down.body.detail).toMatch(/event store/i);
  await esdb.restart();

  for (let i = 3; i < 5; i++) {
    const r = await eventually(
      () => ask(key.body.secret, i),
      (x) => x.status === 200,
      15_000,
    );
    expect(r.status).toBe(200);
  }

  // The projections resubscribed after the outage: the balance is the deposit minus every debit stored.
  const debitsInStore = async () =>
    (await server.services.store.readAll()).filter(
      (e) => e.type === 'TokensDebited' && (e.data as { workspaceId: string }).workspaceId === ws,
    );
  const debits = await debitsInStore();
  expect(debits).toHaveLength(5);
  const spent = debits.reduce((sum, e) => sum + BigInt((e.data as { amountNanoUsd: string }).amountNanoUsd), 0n);
  const b = await eventually(
    () => billing(server, u, ws),
    (r) => r.body.spent === formatUsd(spent) && r.body.reserved === '0',
    15_000,
  );
  expect(b.body.spent).toBe(formatUsd(spent));
  expect(b.body.balance).toBe(formatUsd(100_000_000_000n - spent));
  expect((await debitsInStore()).map((e) => e.id)).toEqual(debits.map((e) => e.id));
}, 60_000);

test.each([
  'esdb://127.0.0.1:1?tls=false',
  'esdb+discover://127.0.0.1:1?tls=false&maxDiscoverAttempts=1&discoveryInterval=10&gossipTimeout=1',
  'esdb://127.0.0.1:1,127.0.0.1:2?tls=false&maxDiscoverAttempts=1&discoveryInterval=10&gossipTimeout=1',
])(
  'an unreachable store at start (%s) is one line naming EVENTSTORE_CONNECTION_STRING',
  async (cs) => {
    const err = await startTestServer({ EVENT_STORE: 'esdb', EVENTSTORE_CONNECTION_STRING: cs }).then(
      (s) => s.close().then(() => null),
      (e: unknown) => e,
    );
    expect((err as Error)?.name).toBe('StoreUnavailable');
    const line = describeStartupError(err, { EVENT_STORE: 'esdb', DATA_DIR: '/tmp', EVENTSTORE_CONNECTION_STRING: cs });
    expect(line).toContain(`EVENTSTORE_CONNECTION_STRING=${cs}`);
    expect(line).not.toContain('\n');
  },
  30_000,
);
