import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { formatUsd, parseUsd } from '../../../src/platform/money';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { expireDueCredits } from '../../../src/billing/workers/credit-expiry/worker';
import { LedgerReplay } from '../../../src/billing';
import { startTestServer, TestServer } from '../../support/harness';
import { api, billing, fundedUser, type TestUser } from './helpers';

/**
 * Credit grants end to end (docs/BILLING.md, "Credit grants"): an operator grants promotional credit,
 * debits draw it first, the admission figure is exactly the unexpired remaining amounts at the
 * service's clock, and the expiry is recorded once, after the holds admitted before it.
 */
const TOKEN = 'operator-token-credits-0123456789';
let server: TestServer;
let ann: TestUser;
beforeAll(async () => {
  // The sweeper and the expiry loop stay out of the way: the test runs the expiry pass itself.
  server = await startTestServer({ ADMIN_TOKEN: TOKEN, SWEEPER_ENABLED: 'false' });
  ann = await fundedUser(server, 'grants');
});
afterAll(() => server?.close());

const grant = (ws: string, body: Record<string, unknown>, key: string | null = randomUUID(), auth = `Bearer ${TOKEN}`) => {
  const req = api(server).post(`/admin/workspaces/${ws}/credit-grants`).set('Authorization', auth);
  return (key === null ? req : req.set('Idempotency-Key', key)).send(body);
};
const billingEvents = async (ws: string) => (await server.services.store.readStream(streams.billing(ws))).length;
const grants = async (u: TestUser, ws: string) =>
  (await api(server).get(`/v1/workspaces/${ws}/billing/credit-grants`).set(u.auth).expect(200)).body.grants as Array<
    Record<string, unknown>
  >;

test('bad input is 422 naming the field, and appends nothing', async () => {
  const ws = ann.personalWs;
  const before = await billingEvents(ws);
  const future = new Date(server.services.now().getTime() + 86_400_000).toISOString();
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ amount: '0' }, 'amount'],
    [{ amount: '-5' }, 'amount'],
    [{ amount: '1.001' }, 'amount'],
    [{ amount: 5 }, 'amount'],
    [{ amount: '5', expiresAt: '2020-01-01T00:00:00Z' }, 'expiresAt'],
    [{ amount: '5', expiresAt: 'tomorrow' }, 'expiresAt'],
    [{ amount: '5', expiresAt: future, priority: 0 }, 'priority'],
    [{ amount: '5', priority: 1.5 }, 'priority'],
    [{ amount: '5', note: 'x'.repeat(501) }, 'note'],
    [{ amount: '1000000' }, 'amount'],
  ];
  for (const [body, field] of cases) {
    const r = await grant(ws, body);
    expect({ body, status: r.status }).toEqual({ body, status: 422 });
    expect(r.body.detail[0].loc).toEqual(['body', field]);
  }
  const noKey = await grant(ws, { amount: '5' }, null);
  expect(noKey.status).toBe(422);
  expect(noKey.body.detail[0].loc).toEqual(['header', 'Idempotency-Key']);
  expect(await billingEvents(ws)).toBe(before);
});

test('operators only: a member’s session 403, no token 401, another workspace 404', async () => {
  const ws = ann.personalWs;
  expect((await grant(ws, { amount: '5' }, randomUUID(), ann.auth.Authorization)).status).toBe(403);
  // Every operator route answers a signed-in user the same way.
  expect((await api(server).get('/admin/projections').set(ann.auth)).status).toBe(403);
  expect((await api(server).post(`/admin/workspaces/${ws}/credit-grants`).send({ amount: '5' })).status).toBe(401);
  expect((await grant(randomUUID(), { amount: '5' })).status).toBe(404);
  const other = await fundedUser(server, 'stranger');
  expect((await api(server).get(`/v1/workspaces/${ws}/billing/credit-grants`).set(other.auth)).status).toBe(404);
});

test('a grant is idempotent by its key, listed with the deposit, drawn first, and counted exactly by admission until it expires', async () => {
  const s = server.services;
  const ws = ann.personalWs;
  const realNow = s.now;
  const t0 = realNow().getTime();
  const expiresAt = new Date(t0 + 3_600_000).toISOString();
  const key = randomUUID();
  const body = { amount: '5', expiresAt, priority: 10, note: 'launch promotion' };
  const first = await grant(ws, body, key);
  expect(first.status).toBe(201);
  expect(first.body.grant).toMatchObject({
    category: 'promotional',
    source: 'operator',
    amount: '5',
    remaining: '5',
    status: 'active',
    expiresAt,
  });
  const again = await grant(ws, body, key);
  expect(again.status).toBe(201);
  expect(again.headers['idempotent-replayed']).toBe('true');
  expect(again.body.grant.grantId).toBe(first.body.grant.grantId);
  expect((await grant(ws, { ...body, amount: '6' }, key)).status).toBe(409);
  const grantId = first.body.grant.grantId as string;

  const listed = await grants(ann, ws);
  expect(listed.map((g) => [g.category, g.amount, g.remaining])).toEqual([
    ['promotional', '5', '5'],
    ['paid', '100', '100'],
  ]);
  expect((await billing(server, ann, ws)).body).toMatchObject({ balance: '105', granted: '5', deposited: '100' });

  // Admission holds against exactly the unexpired remaining amounts: 105 USD now, 100 USD once the grant has expired.
  const r = new Reservations(s.redis, s.ks);
  const exact = async (nowMs: number, amount: bigint) => {
    const id = randomUUID();
    const res = await r.reserve(ws, id, amount, nowMs);
    if (res.ok) await r.release(ws, id);
    return res.ok;
  };
  const expMs = Date.parse(expiresAt);
  expect(await exact(expMs - 1, parseUsd('105'))).toBe(true);
  expect(await exact(expMs - 1, parseUsd('105') + 1n)).toBe(false);
  expect(await exact(expMs, parseUsd('100'))).toBe(true);
  expect(await exact(expMs, parseUsd('100') + 1n)).toBe(false);

  // A debit draws the promotion first (priority 10 before the deposit's 50).
  const keyRes = await api(server).post(`/v1/workspaces/${ws}/keys`).set(ann.auth).send({ name: 'grant key' }).expect(201);
  const call = await api(server)
    .post('/external/api/inference')
    .set('Authorization', `Bearer ${keyRes.body.secret}`)
    .send({ context: [{ type: 'Human', text: 'Hello' }], config: 'service_3_productivity', max_tokens: 12 });
  expect(call.status).toBe(200);
  const ledger = (await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(ann.auth).expect(200)).body.entries as Array<{
    type: string;
    amountNanoUsd: string;
    drawn?: Array<{ grantId: string; amountNanoUsd: string }>;
  }>;
  const debit = ledger.find((e) => e.type === 'TokensDebited')!;
  const cost = -BigInt(debit.amountNanoUsd);
  expect(debit.drawn).toEqual([{ grantId, amountNanoUsd: cost.toString() }]);
  const left = parseUsd('5') - cost;

  // A hold admitted before the expiry keeps it waiting; once released, the expiry is recorded, once.
  const held = randomUUID();
  expect((await r.reserve(ws, held, 1000n, expMs - 10)).ok).toBe(true);
  try {
    s.now = () => new Date(expMs + 1);
    expect((await billing(server, ann, ws)).body.balance).toBe(formatUsd(parseUsd('100')));
    expect((await grants(ann, ws))[0]).toMatchObject({ grantId, status: 'expired', remaining: '0' });
    expect(await expireDueCredits(s)).toBe(0);
    await r.release(ws, held);
    expect(await expireDueCredits(s)).toBe(1);
    expect(await expireDueCredits(s)).toBe(0);
  } finally {
    s.now = realNow;
  }
  const after = (await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(ann.auth).expect(200)).body.entries as Array<{
    type: string;
    ref: string;
    amountNanoUsd: string;
    balanceNanoUsd: string;
  }>;
  const expired = after.filter((e) => e.type === 'CreditExpired');
  expect(expired).toEqual([
    expect.objectContaining({ ref: grantId, amountNanoUsd: (-left).toString(), balanceNanoUsd: parseUsd('100').toString() }),
  ]);
  expect((await billing(server, ann, ws)).body).toMatchObject({ balance: '100', expired: formatUsd(left) });
  expect((await grants(ann, ws))[0]).toMatchObject({ grantId, status: 'expired', remaining: '0', expired: formatUsd(left) });

  // The month's statement balances by category: opening + deposits + grants - usage - expiries = closing.
  const month = realNow().toISOString().slice(0, 7);
  const st = (await api(server).get(`/v1/workspaces/${ws}/statements/${month}`).set(ann.auth).expect(200)).body;
  expect(st.credits.map((c: { kind: string; amount: string }) => [c.kind, c.amount])).toEqual([
    ['deposit', '100'],
    ['grant', '5'],
  ]);
  expect(st.expiries).toEqual([expect.objectContaining({ reference: grantId, amount: formatUsd(left) })]);
  expect(st.totals).toMatchObject({ grants: '5', expiries: formatUsd(left), credits: '105', debits: formatUsd(cost + left) });
  expect(parseUsd(st.openingBalance) + parseUsd(st.totals.credits) - parseUsd(st.totals.debits)).toBe(parseUsd(st.closingBalance));
  expect(st.closingBalance).toBe('100');

  // The replay of the store agrees: the same split, the same expiry.
  const replay = new LedgerReplay();
  const lines = (await s.store.readAll()).map((e) => replay.apply(e)).filter((l) => l?.workspaceId === ws);
  expect(lines.find((l) => l!.type === 'TokensDebited')!.drawn).toEqual([{ grantId, amount: cost }]);
  expect(lines.find((l) => l!.type === 'CreditExpired')!.amount).toBe(-left);
  expect(replay.get(ws)).toMatchObject({ balance: parseUsd('100'), granted: parseUsd('5'), expired: left });
});
