import { randomUUID } from 'node:crypto';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { periodIdsAt, periodWindow } from '../../../src/platform/budget-periods';
import { formatUsd, parseUsd } from '../../../src/platform/money';
import { startTestServer, TestServer } from '../../support/harness';
import { eventually } from '../../support/wait';
import { streams } from '../../../src/platform/streams';
import { addMember, api, createWorkspace, fund, newUser, TestUser } from './helpers';

/** GET …/keys/{id}/budgets: every layer admission checks, in its order, before any of them refuses. */

let server: TestServer;
let ann: TestUser; // admin
let bob: TestUser; // member
let team: string;
beforeAll(async () => {
  server = await startTestServer();
  [ann, bob] = await Promise.all([newUser(server, 'ann'), newUser(server, 'bob')]);
  team = await createWorkspace(server, ann, 'Stack');
  await addMember(server, ann, team, bob);
  await fund(server, team, { depositUsd: 100 });
});
afterAll(() => server?.close());

const newKey = async (by: TestUser) => {
  const res = await api(server).post(`/v1/workspaces/${team}/keys`).set(by.auth).send({ name: 'stacked' });
  expect(res.status).toBe(201);
  return res.body as { keyId: string; secret: string };
};
const stack = (keyId: string, by: TestUser = bob) => api(server).get(`/v1/workspaces/${team}/keys/${keyId}/budgets`).set(by.auth);

const reservedOf = async (requestId: string) => {
  const [requested] = await server.services.store.readStream(streams.inference(requestId));
  return BigInt((requested!.data as { reservedNanoUsd: string }).reservedNanoUsd);
};

test('a key without budgets: the balance alone, and the answers say what is left of it', async () => {
  const key = await newKey(ann);
  const before = parseUsd((await stack(key.keyId)).body.layers[0].remaining);
  const call = await fetch(`${server.url}/external/api/inference`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key.secret}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ context: [{ type: 'Human', text: 'Hello' }], config: 'service_3_pi', max_tokens: 20 }),
  });
  expect(call.status).toBe(200);
  const reserved = await reservedOf(call.headers.get('x-request-id')!);
  expect([call.headers.get('x-budget-remaining-scope'), call.headers.get('x-budget-remaining-usd')]).toEqual([
    'balance',
    formatUsd(before - reserved),
  ]);
  await eventually(
    () => stack(key.keyId),
    (r) => r.body.layers?.[0]?.held === '0' && r.body.layers[0].limit !== formatUsd(before),
  );
  const res = await stack(key.keyId);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    keyId: key.keyId,
    layers: [
      { scope: 'balance', limit: expect.any(String), period: null, spent: null, held: '0', remaining: expect.any(String), resetsAt: null },
    ],
    tightest: { scope: 'balance', remaining: res.body.layers[0].remaining },
  });
  expect(res.body.layers[0].remaining).toBe(res.body.layers[0].limit);
});

test('balance, key and member budgets in enforcement order, with spend, holds, what is left and the reset; the tightest named', async () => {
  const key = await newKey(bob);
  expect(
    (await api(server).patch(`/v1/workspaces/${team}/keys/${key.keyId}`).set(bob.auth).send({ budget: '5', budgetPeriod: 'daily' })).status,
  ).toBe(200);
  expect(
    (await api(server).put(`/v1/workspaces/${team}/members/${bob.userId}/budget`).set(ann.auth).send({ budget: '3', period: 'weekly' }))
      .status,
  ).toBe(200);
  // One call billed, and one held in flight (as the reserve script holds it).
  const call = await fetch(`${server.url}/external/api/inference`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key.secret}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ context: [{ type: 'Human', text: 'Hello' }], config: 'service_3_pi', max_tokens: 20 }),
  });
  expect(call.status).toBe(200);
  const cost = parseUsd(call.headers.get('x-usage-cost-usd')!);
  // The answer said what was left of the tightest layer once the call was held (nothing else spent yet).
  const reserved = await reservedOf(call.headers.get('x-request-id')!);
  expect([call.headers.get('x-budget-remaining-scope'), call.headers.get('x-budget-remaining-usd')]).toEqual([
    'member',
    formatUsd(parseUsd('3') - reserved),
  ]);
  const hold = parseUsd('0.25');
  const reservations = new Reservations(server.services.redis, server.services.ks);
  const inFlight = randomUUID();
  expect((await reservations.reserve(team, inFlight, hold, Date.now(), { keyId: key.keyId, periods: periodIdsAt(new Date()) })).ok).toBe(
    true,
  );
  try {
    const res = await eventually(
      () => stack(key.keyId),
      (r) => r.body.layers?.[1]?.spent === formatUsd(cost),
    );
    const now = new Date();
    const balance = parseUsd(res.body.layers[0].limit);
    expect(res.body.layers).toEqual([
      {
        scope: 'balance',
        limit: formatUsd(balance),
        period: null,
        spent: null,
        held: formatUsd(hold),
        remaining: formatUsd(balance - hold),
        resetsAt: null,
      },
      {
        scope: 'key',
        limit: '5',
        period: 'daily',
        spent: formatUsd(cost),
        held: formatUsd(hold),
        remaining: formatUsd(parseUsd('5') - cost - hold),
        resetsAt: periodWindow('daily', now).resetsAt.toISOString(),
      },
      {
        scope: 'member',
        limit: '3',
        period: 'weekly',
        spent: formatUsd(cost),
        held: formatUsd(hold),
        remaining: formatUsd(parseUsd('3') - cost - hold),
        resetsAt: periodWindow('weekly', now).resetsAt.toISOString(),
        userId: bob.userId,
      },
    ]);
    expect(res.body.tightest).toEqual({ scope: 'member', remaining: formatUsd(parseUsd('3') - cost - hold) });
  } finally {
    await reservations.release(team, inFlight);
  }
  // Released: nothing held any more.
  expect((await stack(key.keyId)).body.layers.map((l: { held: string }) => l.held)).toEqual(['0', '0', '0']);
});

test('an unknown key, another workspace or no session: 404 / 401', async () => {
  const key = await newKey(ann);
  expect((await stack(randomUUID())).status).toBe(404);
  const eve = await newUser(server, 'eve');
  expect((await stack(key.keyId, eve)).status).toBe(404);
  expect((await api(server).get(`/v1/workspaces/${team}/keys/${key.keyId}/budgets`)).status).toBe(401);
});
