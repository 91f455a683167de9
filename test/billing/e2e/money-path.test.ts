import { streams } from '../../../src/platform/streams';
import { startTestServer, TestServer } from '../../support/harness';
import { api, attach, billing, deposit, newUser } from './helpers';
import { eventually } from '../../support/wait';

/**
 * The whole money path over HTTP, with the real inference endpoint: card → initial deposit → key →
 * requests debited at per-token prices → ledger, usage and auto-reload agree with the event store.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

test('deposit, key, inference debits, ledger, usage and an auto-reload, all exact', async () => {
  const u = await newUser(server, 'money');
  const ws = u.personalWs;
  // No key before the workspace is funded (a card and the initial deposit).
  expect((await api(server).post(`/v1/workspaces/${ws}/keys`).set(u.auth).send({ name: 'early' })).status).toBe(402);
  expect((await attach(server, u, ws)).status).toBe(200);
  expect((await deposit(server, u, ws, '100')).status).toBe(201);
  const key = await api(server).post(`/v1/workspaces/${ws}/keys`).set(u.auth).send({ name: 'prod key' });
  expect(key.status).toBe(201);
  // A threshold just under the balance (and at most the amount): the first request's debit triggers a reload.
  const put = await api(server)
    .put(`/v1/workspaces/${ws}/billing/auto-reload`)
    .set(u.auth)
    .send({ enabled: true, threshold: '99.9999', amount: '100' });
  expect(put.status).toBe(200);

  for (let i = 0; i < 3; i++) {
    const r = await api(server)
      .post('/external/api/inference')
      .set('Authorization', `Bearer ${key.body.secret}`)
      .send({ context: [{ type: 'Human', text: `Hello number ${i}` }], config: 'service_3_productivity', max_tokens: 12 });
    expect(r.status).toBe(200);
  }

  const b = await eventually(
    () => billing(server, u, ws),
    (r) => r.body.reloaded === '100' && r.body.reserved === '0' && r.body.autoReload?.status === 'active',
  );
  // The debits in the store, at the prices they carry.
  const all = await server.services.store.readAll();
  const debits = all.filter((e) => e.type === 'TokensDebited' && (e.data as { workspaceId: string }).workspaceId === ws);
  expect(debits).toHaveLength(3);
  let spent = 0n;
  for (const e of debits) {
    const d = e.data as {
      inputTokens: number;
      outputTokens: number;
      inputPriceNanoUsd: string;
      outputPriceNanoUsd: string;
      amountNanoUsd: string;
      keyId: string;
    };
    expect(BigInt(d.amountNanoUsd)).toBe(
      BigInt(d.inputTokens) * BigInt(d.inputPriceNanoUsd) + BigInt(d.outputTokens) * BigInt(d.outputPriceNanoUsd),
    );
    expect(d.keyId).toBe(key.body.keyId);
    spent += BigInt(d.amountNanoUsd);
  }
  const { formatUsd } = await import('../../../src/platform/money');
  expect(b.body.spent).toBe(formatUsd(spent));
  expect(b.body.balance).toBe(formatUsd(200_000_000_000n - spent));
  expect((await server.services.store.readStream(streams.billing(ws))).filter((e) => e.type === 'AutoReloadSucceeded')).toHaveLength(1);

  const ledger = await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(u.auth);
  const types = ledger.body.entries.map((e: { type: string }) => e.type);
  expect(types.filter((t: string) => t === 'TokensDebited')).toHaveLength(3);
  expect(types[0]).toBe('DepositSucceeded');
  expect(types).toContain('AutoReloadSucceeded');
  expect(ledger.body.entries.at(-1).balance).toBe(b.body.balance);

  const usage = await api(server).get(`/v1/workspaces/${ws}/usage?granularity=hour&groupBy=key`).set(u.auth);
  expect(usage.body.series).toHaveLength(1);
  expect(usage.body.series[0]).toMatchObject({
    keyId: key.body.keyId,
    keyName: 'prod key',
    total: { requests: 3, cost: formatUsd(spent) },
  });
});
