import { randomUUID } from 'node:crypto';
import http from 'node:http';
import * as b from '../../../src/billing/routes/billing-schemas';
import { usageLive, usageSeries } from '../../../src/billing/routes/usage-schemas';
import * as st from '../../../src/billing/routes/statement-schemas';
import { contractTour } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { api, attach, billing, deposit, newUser } from './helpers';
import { debit } from '../../support/debit';

/**
 * Every billing route, called for real, answers what its contract documents: each status it is
 * called into and each body, field for field; the live stream's events parse with its event schema.
 */
const OPERATOR = 'operator-token-contract-0123456789';
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ LIVE_STREAMS_PER_USER: '1', ADMIN_TOKEN: OPERATOR });
});
afterAll(() => server?.close());

const { conforms, missed } = contractTour();

test('card, deposits, auto-reload, ledger and usage answer as documented', async () => {
  const u = await newUser(server, 'payer');
  const ws = u.personalWs;
  await conforms(b.showBilling, await billing(server, u, ws), 200);
  await conforms(b.showBilling, await api(server).get('/v1/workspaces/unknown/billing').set(u.auth), 404);
  await conforms(
    b.configureAutoReload,
    await api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send({ enabled: true, threshold: '5', amount: '20' }),
    409,
  );
  await conforms(b.makeDeposit, await deposit(server, u, ws, '100'), 409);
  await conforms(b.attachPaymentMethod, await attach(server, u, ws, 'pm_nope'), 422);
  await conforms(b.attachPaymentMethod, await attach(server, u, ws), 200);
  await conforms(b.makeDeposit, await deposit(server, u, ws, '100'), 201);
  await conforms(b.makeDeposit, await deposit(server, u, ws, '100.001'), 422);
  await conforms(b.makeDeposit, await api(server).post(`/v1/workspaces/${ws}/billing/deposits`).set(u.auth).send({ amount: '100' }), 422);
  await conforms(
    b.configureAutoReload,
    await api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send({ enabled: true, threshold: '5', amount: '20' }),
    200,
  );
  await conforms(
    b.configureAutoReload,
    await api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send({ enabled: 'yes' }),
    422,
  );
  await conforms(b.showBilling, await billing(server, u, ws), 200);

  const declined = await newUser(server, 'declined');
  await attach(server, declined, declined.personalWs, 'pm_card_chargeDeclined');
  await conforms(b.makeDeposit, await deposit(server, declined, declined.personalWs, '100'), 402);
  await conforms(b.listDeposits, await api(server).get(`/v1/workspaces/${declined.personalWs}/billing/deposits`).set(declined.auth), 200);

  const grant = (body: Record<string, unknown>) =>
    api(server)
      .post(`/admin/workspaces/${ws}/credit-grants`)
      .set('Authorization', `Bearer ${OPERATOR}`)
      .set('Idempotency-Key', randomUUID())
      .send(body);
  await conforms(b.grantCredit, await grant({ amount: '5', priority: 5, note: 'contract tour' }), 201);
  await conforms(b.grantCredit, await grant({ amount: '-5' }), 422);
  await conforms(b.grantCredit, await api(server).post(`/admin/workspaces/${ws}/credit-grants`).set(u.auth).send({ amount: '5' }), 403);
  await conforms(b.listCreditGrants, await api(server).get(`/v1/workspaces/${ws}/billing/credit-grants`).set(u.auth), 200);
  await conforms(b.listCreditGrants, await api(server).get('/v1/workspaces/unknown/billing/credit-grants').set(u.auth), 404);

  await debit(server.services, ws, { keyId: 'key-a', inputTokens: 10, outputTokens: 5 });
  await conforms(b.ledger, await api(server).get(`/v1/workspaces/${ws}/billing/ledger?limit=1`).set(u.auth), 200);
  await conforms(b.ledger, await api(server).get(`/v1/workspaces/${ws}/billing/ledger?cursor=x`).set(u.auth), 422);
  for (const q of ['granularity=minute', 'groupBy=key', 'groupBy=model&granularity=day', 'granularity=week']) {
    await conforms(usageSeries, await api(server).get(`/v1/workspaces/${ws}/usage?${q}`).set(u.auth), q.includes('week') ? 422 : 200);
  }
  for (const q of ['groupBy=member', 'groupBy=endpoint&format=csv', 'format=focus', 'groupBy=tag']) {
    await conforms(usageSeries, await api(server).get(`/v1/workspaces/${ws}/usage?${q}`).set(u.auth), q.includes('tag') ? 422 : 200);
  }

  const month = new Date().toISOString().slice(0, 7);
  await conforms(st.listStatements, await api(server).get(`/v1/workspaces/${ws}/statements`).set(u.auth), 200);
  await conforms(st.listStatements, await api(server).get('/v1/workspaces/unknown/statements').set(u.auth), 404);
  for (const f of ['', '?format=csv'])
    await conforms(st.showStatement, await api(server).get(`/v1/workspaces/${ws}/statements/${month}${f}`).set(u.auth), 200);
  await conforms(st.showStatement, await api(server).get(`/v1/workspaces/${ws}/statements/1999-01`).set(u.auth), 422);
  const depositId = (await api(server).get(`/v1/workspaces/${ws}/billing/deposits`).set(u.auth)).body.deposits[0].depositId;
  await conforms(st.showReceipt, await api(server).get(`/v1/workspaces/${ws}/billing/deposits/${depositId}/receipt`).set(u.auth), 200);
  await conforms(st.showReceipt, await api(server).get(`/v1/workspaces/${ws}/billing/deposits/nope/receipt`).set(u.auth), 404);
  await conforms(
    st.showReceipt,
    await api(server).get(`/v1/workspaces/${ws}/billing/deposits/${depositId}/receipt?format=doc`).set(u.auth),
    422,
  );
});

test('the live stream is text/event-stream and its usage events parse with the documented event schema; its refusals too', async () => {
  const u = await newUser(server, 'live');
  const ws = u.personalWs;
  const req = http.get(`${server.url}/v1/workspaces/${ws}/usage/live`, { headers: u.auth });
  const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
  let text = '';
  res.on('data', (d: Buffer) => (text += d.toString()));
  await conforms(usageLive, await api(server).get(`/v1/workspaces/${ws}/usage/live`).set(u.auth), 429); // the one stream allowed is open
  await conforms(usageLive, await api(server).get('/v1/workspaces/unknown/usage/live').set(u.auth), 404);
  await new Promise((r) => setTimeout(r, 100)); // the subscription is made after the headers
  await debit(server.services, ws, { keyId: 'key-live', inputTokens: 10, outputTokens: 5 });
  for (let i = 0; i < 50 && !text.includes('event: usage'); i++) await new Promise((r) => setTimeout(r, 50));
  req.destroy();
  expect(text).toContain('event: usage');
  const events = await conforms(usageLive, { status: res.statusCode ?? 0, headers: res.headers, text }, 200);
  expect(events).toEqual([
    expect.objectContaining({ workspaceId: ws, keyId: 'key-live', inputTokens: 10, outputTokens: 5, cost: '0.000075' }),
  ]);
});

test('credit grants and credit notes answer as documented', async () => {
  const u = await newUser(server, 'credited');
  const ws = u.personalWs;
  await attach(server, u, ws);
  await deposit(server, u, ws, '100');
  const op = { Authorization: `Bearer ${OPERATOR}` };
  const grant = (body: object, key = randomUUID()) =>
    api(server).post(`/admin/workspaces/${ws}/credit-grants`).set(op).set('Idempotency-Key', key).send(body);
  await conforms(b.grantCredit, await grant({ amount: '5', note: 'welcome' }), 201);
  await conforms(b.grantCredit, await grant({ amount: '0' }), 422);
  await conforms(b.grantCredit, await api(server).post(`/admin/workspaces/${ws}/credit-grants`).set(u.auth).send({ amount: '5' }), 403);
  await conforms(b.listCreditGrants, await api(server).get(`/v1/workspaces/${ws}/billing/credit-grants`).set(u.auth), 200);
  const requestId = await debit(server.services, ws, { keyId: 'key-n', inputTokens: 10, outputTokens: 5 });
  const note = (id: string, body: object, key = randomUUID()) =>
    api(server).post(`/admin/workspaces/${ws}/requests/${id}/credit-notes`).set(op).set('Idempotency-Key', key).send(body);
  await conforms(b.issueCreditNote, await note(requestId, { amount: '0.00002', reason: 'slow' }), 201);
  await conforms(b.issueCreditNote, await note(requestId, { amount: '1', reason: 'too much' }), 422);
  await conforms(b.issueCreditNote, await note(randomUUID(), { amount: '0.00001', reason: 'unknown' }), 404);
  await conforms(
    b.issueCreditNote,
    await api(server).post(`/admin/workspaces/${ws}/requests/${requestId}/credit-notes`).set(u.auth).send({ amount: '1', reason: 'x' }),
    403,
  );
  await conforms(b.listCreditGrants, await api(server).get(`/v1/workspaces/${ws}/billing/credit-grants`).set(u.auth), 200);
  await conforms(b.ledger, await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(u.auth), 200);
});

test('the tour called every route the billing area documents', () => {
  const notCalled = missed(b.routes);
  expect(notCalled).toEqual([]);
});
