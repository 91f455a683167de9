import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { RouteContract } from '../../../src/api/contract';
import * as b from '../../../src/api/billing/schemas';
import { usageLive, usageLiveEvent, usageSeries } from '../../../src/api/billing/usage-schemas';
import { streams } from '../../../src/domain/streams';
import { expectMatchesContract, type AnsweredResponse } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { api, attach, billing, deposit, newUser } from './helpers';

/**
 * Every billing route, called for real, answers what its contract documents: each status it is
 * called into and each body, field for field; the live stream's events parse with its event schema.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ LIVE_STREAMS_PER_USER: '1' });
});
afterAll(() => server?.close());

const checked = new Set<RouteContract>();
/** The answer has the status the tour expects, and matches the contract. */
function conforms(contract: RouteContract, res: AnsweredResponse, status: number) {
  checked.add(contract);
  if (res.status !== status) throw new Error(`${contract.method.toUpperCase()} ${contract.path}: ${res.status} where ${status} was due: ${JSON.stringify(res.body)}`);
  return expectMatchesContract(contract, res);
}

async function debit(ws: string, keyId: string) {
  const requestId = randomUUID();
  const r = await server.services.store.append(
    streams.inference(requestId),
    [
      {
        id: randomUUID(),
        type: 'TokensDebited',
        data: { requestId, workspaceId: ws, keyId, config: 'service_3_pi', inputTokens: 10, outputTokens: 5, inputPriceNanoUsd: '2500', outputPriceNanoUsd: '10000', amountNanoUsd: '75000' },
      },
    ],
    { expectedRevision: 'no_stream' },
  );
  await server.services.progress.waitFor(r.position, 5000);
}

test('card, deposits, auto-reload, ledger and usage answer as documented', async () => {
  const u = await newUser(server, 'payer');
  const ws = u.personalWs;
  conforms(b.showBilling, await billing(server, u, ws), 200);
  conforms(b.showBilling, await api(server).get('/v1/workspaces/unknown/billing').set(u.auth), 404);
  conforms(b.configureAutoReload, await api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send({ enabled: true, threshold: '5', amount: '20' }), 409);
  conforms(b.makeDeposit, await deposit(server, u, ws, '100'), 409);
  conforms(b.attachPaymentMethod, await attach(server, u, ws, 'pm_nope'), 422);
  conforms(b.attachPaymentMethod, await attach(server, u, ws), 200);
  conforms(b.makeDeposit, await deposit(server, u, ws, '100'), 201);
  conforms(b.makeDeposit, await deposit(server, u, ws, '100.001'), 422);
  conforms(b.makeDeposit, await api(server).post(`/v1/workspaces/${ws}/billing/deposits`).set(u.auth).send({ amount: '100' }), 422);
  conforms(b.configureAutoReload, await api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send({ enabled: true, threshold: '5', amount: '20' }), 200);
  conforms(b.configureAutoReload, await api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send({ enabled: 'yes' }), 422);
  conforms(b.showBilling, await billing(server, u, ws), 200);

  const declined = await newUser(server, 'declined');
  await attach(server, declined, declined.personalWs, 'pm_card_chargeDeclined');
  conforms(b.makeDeposit, await deposit(server, declined, declined.personalWs, '100'), 402);
  conforms(b.listDeposits, await api(server).get(`/v1/workspaces/${declined.personalWs}/billing/deposits`).set(declined.auth), 200);

  await debit(ws, 'key-a');
  conforms(b.ledger, await api(server).get(`/v1/workspaces/${ws}/billing/ledger?limit=1`).set(u.auth), 200);
  conforms(b.ledger, await api(server).get(`/v1/workspaces/${ws}/billing/ledger?cursor=x`).set(u.auth), 422);
  for (const q of ['granularity=minute', 'groupBy=key', 'groupBy=model&granularity=day', 'granularity=week']) {
    conforms(usageSeries, await api(server).get(`/v1/workspaces/${ws}/usage?${q}`).set(u.auth), q.includes('week') ? 422 : 200);
  }
});

test('the live stream is text/event-stream, its usage events parse with the documented schema, and its refusals too', async () => {
  const u = await newUser(server, 'live');
  const ws = u.personalWs;
  const req = http.get(`${server.url}/v1/workspaces/${ws}/usage/live`, { headers: u.auth });
  const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
  let text = '';
  res.on('data', (d: Buffer) => (text += d.toString()));
  conforms(usageLive, { status: res.statusCode ?? 0, body: undefined, headers: res.headers as AnsweredResponse['headers'] }, 200);
  conforms(usageLive, await api(server).get(`/v1/workspaces/${ws}/usage/live`).set(u.auth), 429); // the one stream allowed is open
  conforms(usageLive, await api(server).get('/v1/workspaces/unknown/usage/live').set(u.auth), 404);
  await new Promise((r) => setTimeout(r, 100)); // the subscription is made after the headers
  await debit(ws, 'key-live');
  for (let i = 0; i < 50 && !text.includes('event: usage'); i++) await new Promise((r) => setTimeout(r, 50));
  req.destroy();
  const data = /event: usage\ndata: (.*)\n/.exec(text)?.[1];
  expect(data).toBeDefined();
  expect(usageLive.responses[200].eventSchema).toBe(usageLiveEvent);
  const event = JSON.parse(data!);
  expect(usageLiveEvent.strict().parse(event)).toEqual(event);
});

test('the tour called every route the billing area documents', () => {
  const missed = b.routes.filter((c) => !checked.has(c)).map((c) => `${c.method.toUpperCase()} ${c.path}`);
  expect(missed).toEqual([]);
});
