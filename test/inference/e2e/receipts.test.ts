import { randomUUID } from 'node:crypto';
import type { TokensDebited } from '../../../src/inference/events';
import { startTestServer, TestServer } from '../../support/harness';
import { eventually } from '../../support/wait';
import { api, fund, newUser, TestUser } from '../../accounts/e2e/helpers';
import { inferenceEvents } from '../int/support/seed';

/** The receipt of a request, for its workspace's members and for the key that sent it, answered from its events. */

let server: TestServer;
let owner: TestUser;
let secret: string;
let key: { keyId: string; last4: string };
beforeAll(async () => {
  server = await startTestServer();
  owner = await newUser(server, 'receipts');
  await fund(server, owner.personalWs);
  const created = await api(server)
    .post(`/v1/workspaces/${owner.personalWs}/keys`)
    .set(owner.auth)
    .set('X-Requested-With', 'test')
    .send({ name: 'billing check' });
  expect(created.status).toBe(201);
  secret = created.body.secret as string;
  key = { keyId: created.body.keyId as string, last4: created.body.last4 as string };
});
afterAll(() => server?.close());

const infer = (path = '/external/api/inference', k = secret) =>
  api(server)
    .post(path)
    .set('Authorization', `Bearer ${k}`)
    .send({ context: [{ type: 'Human', text: 'A receipt, please' }], config: 'service_3_productivity', max_tokens: 25 });

test('members and the key read the same receipt, and it matches the ledger event', async () => {
  const res = await infer();
  expect(res.status).toBe(200);
  const requestId = res.headers['x-request-id'] as string;
  const events = await inferenceEvents(server.services, requestId);
  const debit = events.find((e) => e.type === 'TokensDebited')!;
  const d = debit.data as TokensDebited['data'];

  const member = await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${requestId}`).set(owner.auth);
  expect(member.status).toBe(200);
  const r = member.body;
  expect(r).toMatchObject({
    requestId,
    workspaceId: owner.personalWs,
    config: 'service_3_productivity',
    endpoint: 'inference',
    status: 'completed',
    maxTokens: 25,
    inputTokens: d.inputTokens,
    outputTokens: d.outputTokens,
    prices: { inputUsdPerToken: '0.0000025', outputUsdPerToken: '0.00001' },
    finishReason: expect.stringMatching(/^(stop|length)$/),
    debit: { position: debit.position.toString(), eventId: debit.id },
  });
  expect(r.cost).toBe(res.headers['x-usage-cost-usd']);
  expect(r.hold.reserved).toMatch(/^\d/);
  expect(r.hold.released).toBe(r.hold.reserved);
  expect(Date.parse(r.completedAt)).toBeGreaterThanOrEqual(Date.parse(r.requestedAt));
  // The key's name and last four (from the audit read model, built from the key's events).
  const again = await eventually(
    () => api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${requestId}`).set(owner.auth),
    (a) => a.body.key?.name !== null,
  );
  expect(again.body.key).toEqual({ keyId: key.keyId, name: 'billing check', last4: key.last4 });

  const byKey = await api(server).get(`/external/api/inference/requests/${requestId}`).set('Authorization', `Bearer ${secret}`);
  expect(byKey.status).toBe(200);
  expect(byKey.body).toEqual((await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${requestId}`).set(owner.auth)).body);

  // A uuid is one id in any case: the id copied in upper case finds the same receipt.
  const upper = requestId.toUpperCase();
  const memberUpper = await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${upper}`).set(owner.auth);
  expect([memberUpper.status, memberUpper.body.requestId]).toEqual([200, requestId]);
  const keyUpper = await api(server).get(`/external/api/inference/requests/${upper}`).set('Authorization', `Bearer ${secret}`);
  expect(keyUpper.body).toEqual(byKey.body);
  const portalUpper = await api(server).get(`/portal/workspaces/${owner.personalWs}/requests/${upper}`).set(owner.auth);
  expect([portalUpper.status, portalUpper.body.requestId]).toEqual([200, requestId]);
});

test('unknown and foreign requests are 404; a value that is not an id is 422; nobody else reads a receipt', async () => {
  const requestId = (await infer()).headers['x-request-id'] as string;
  const stranger = await newUser(server, 'stranger');
  await fund(server, stranger.personalWs);
  const strangerKey = await api(server)
    .post(`/v1/workspaces/${stranger.personalWs}/keys`)
    .set(stranger.auth)
    .set('X-Requested-With', 't')
    .send({ name: 'other' });

  const unknown = await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${randomUUID()}`).set(owner.auth);
  expect([unknown.status, unknown.body.detail]).toEqual([404, 'No such request in this workspace']);
  // The stranger's own workspace does not hold it; the owner's workspace is not theirs.
  expect((await api(server).get(`/v1/workspaces/${stranger.personalWs}/requests/${requestId}`).set(stranger.auth)).status).toBe(404);
  expect((await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${requestId}`).set(stranger.auth)).status).toBe(404);
  expect(
    (await api(server).get(`/external/api/inference/requests/${requestId}`).set('Authorization', `Bearer ${strangerKey.body.secret}`))
      .status,
  ).toBe(404);
  expect((await api(server).get(`/external/api/inference/requests/${requestId}`)).status).toBe(401);

  for (const bad of ['not-an-id', 'x'.repeat(300), '..%2F..%2Fetc']) {
    const res = await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${bad}`).set(owner.auth);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['path', 'requestId']);
    expect((await api(server).get(`/external/api/inference/requests/${bad}`).set('Authorization', `Bearer ${secret}`)).status).toBe(422);
  }
});

test('the portal cost lookup reads the same receipt', async () => {
  const res = await infer('/external/api/inference/streaming');
  const requestId = res.headers['x-request-id'] as string;
  const portal = await api(server).get(`/portal/workspaces/${owner.personalWs}/requests/${requestId}`).set(owner.auth);
  const receipt = await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${requestId}`).set(owner.auth);
  expect(portal.status).toBe(200);
  expect(portal.body.cost).toBe(receipt.body.cost);
  expect(receipt.body.endpoint).toBe('streaming');
});

test('the token count: the billed prompt tokens, the most it can cost, whether it fits; free; same 422 as inference', async () => {
  const body = {
    context: [{ type: 'Human', text: 'How many tokens is this?' }],
    config: 'service_3_pi',
    max_tokens: 40,
    web_search: false,
  };
  const count = await api(server).post('/external/api/inference/tokens').set('Authorization', `Bearer ${secret}`).send(body);
  expect(count.status).toBe(200);
  expect(count.headers['x-ratelimit-remaining-requests']).toBeDefined();
  const called = await api(server).post('/external/api/inference').set('Authorization', `Bearer ${secret}`).send(body);
  const events = await inferenceEvents(server.services, called.headers['x-request-id'] as string);
  const requested = events[0].data as { promptTokens: number; reservedNanoUsd: string };
  // The persona and system text count: far more than the 7 tokens of the message itself.
  expect(count.body.prompt_tokens).toBe(requested.promptTokens);
  expect(count.body.prompt_tokens).toBeGreaterThan(20);
  expect(count.body).toMatchObject({ config: 'service_3_pi', max_tokens: 40, context_window: 8192, fits: true, web_search: false });
  expect(count.body.max_cost).toBe((Number(requested.reservedNanoUsd) / 1e9).toString());

  const tooBig = await api(server)
    .post('/external/api/inference/tokens')
    .set('Authorization', `Bearer ${secret}`)
    .send({ ...body, context: [{ type: 'Human', text: 'word '.repeat(7800) }], max_tokens: 1000 });
  expect(tooBig.status).toBe(200);
  expect(tooBig.body.fits).toBe(false);
  expect(tooBig.body.prompt_tokens + 1000).toBeGreaterThan(8192);

  // Free: no request stream, no hold, no debit.
  const before = (await server.services.store.readAll()).length;
  await api(server).post('/external/api/inference/tokens').set('Authorization', `Bearer ${secret}`).send(body);
  expect((await server.services.store.readAll()).length).toBe(before);

  const bad = { context: [], config: 'service_3_pi', temperature: 7 };
  const a = await api(server).post('/external/api/inference/tokens').set('Authorization', `Bearer ${secret}`).send(bad);
  const b = await api(server).post('/external/api/inference').set('Authorization', `Bearer ${secret}`).send(bad);
  expect(a.status).toBe(422);
  expect(a.body).toEqual(b.body);
});
