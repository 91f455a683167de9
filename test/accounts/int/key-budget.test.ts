import { reservationKeys } from '../../../src/billing';
import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { usd } from '../../../src/platform/money';
import { keySpend } from '../../../src/billing/projections/balances/queries';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { hotPathReadModels } from '../../support/hot-path';
import { periodIdsAt } from '../../../src/platform/budget-periods';
import { startTestServer, TestServer } from '../../support/harness';
import { fund, settle } from '../../inference/int/support/seed';

/** The per-key budget inside the reserve script, against the real Redis and the projector. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { modules: [hotPathReadModels] });
});
afterAll(() => server.close());

/** Appends one event and waits until the projections applied it. */
async function append(stream: string, type: string, data: Record<string, unknown>) {
  const r = await server.services.store.append(stream, [{ id: randomUUID(), type, data }], { expectedRevision: 'any' });
  await settle(server.services);
  return r;
}

const deposit = (ws: string, nano: bigint) => fund(server.services, ws, { nano });
const setBudget = (ws: string, keyId: string, budget: bigint | null) =>
  append(streams.workspace(ws), 'ApiKeyBudgetChanged', {
    workspaceId: ws,
    keyId,
    monthlyBudgetNanoUsd: budget === null ? null : budget.toString(),
    previousBudgetNanoUsd: null,
    by: 'u1',
  });
const debit = (ws: string, keyId: string, requestId: string, amount: bigint) =>
  append(streams.inference(requestId), 'TokensDebited', {
    requestId,
    workspaceId: ws,
    keyId,
    config: 'service_3_pi',
    inputTokens: 1,
    outputTokens: 0,
    inputPriceNanoUsd: '2500',
    outputPriceNanoUsd: '10000',
    amountNanoUsd: amount.toString(),
  });

/** The periods a request admitted on 2030-01-15 counts in. */
const AT = periodIdsAt(new Date('2030-01-15T12:00:00Z'));
const resv = () => new Reservations(server.services.redis, server.services.ks);

describe('a key budget in the reserve script', () => {
  it('lets exactly what fits through when 200 requests race at the edge of the budget, counting open holds', async () => {
    const ws = randomUUID();
    const keyId = randomUUID();
    await deposit(ws, usd(100));
    const each = 1_000_003n;
    await setBudget(ws, keyId, each * 10n + each - 1n); // room for 10, not 11
    const r = resv();
    const results = await Promise.all(Array.from({ length: 200 }, () => r.reserve(ws, randomUUID(), each, 1, { keyId, periods: AT })));
    expect(results.filter((x) => x.ok)).toHaveLength(10);
    expect(await r.heldByKey(ws, keyId)).toBe(each * 10n);
    // The workspace balance was not what refused them: the holds of refused requests were undone.
    expect(await r.held(ws)).toBe(each * 10n);
    const refused = results.find((x) => !x.ok);
    expect(refused && !refused.ok && refused.budget).toEqual({
      scope: 'key',
      period: 'monthly',
      budget: each * 11n - 1n,
      spent: 0n,
      heldByOthers: each * 10n,
    });
    // Another key of the same workspace is not limited by it.
    expect((await r.reserve(ws, randomUUID(), each * 20n, 1, { keyId: randomUUID(), periods: AT })).ok).toBe(true);
  });

  it("a debit moves the hold into the month's spend atomically; a release frees the key's share", async () => {
    const ws = randomUUID();
    const keyId = randomUUID();
    await deposit(ws, usd(100));
    await setBudget(ws, keyId, 1000n);
    const r = resv();
    const [a, b] = [randomUUID(), randomUUID()];
    expect((await r.reserve(ws, a, 600n, 1, { keyId, periods: AT })).ok).toBe(true);
    expect((await r.reserve(ws, b, 401n, 1, { keyId, periods: AT })).ok).toBe(false);
    // The request used less than it held: 250 spent, 350 back in the budget.
    await debit(ws, keyId, a, 250n);
    const month = new Date().toISOString().slice(0, 7);
    expect(await r.heldByKey(ws, keyId)).toBe(0n);
    expect((await keySpend(server.services.readModels, ws, [keyId], month)).get(keyId)).toBe(250n);
    expect((await r.reserve(ws, b, 751n, 1, { keyId, periods: periodIdsAt(new Date()) })).ok).toBe(false);
    expect(await r.heldByKey(ws, keyId)).toBe(0n);
    expect((await r.reserve(ws, b, 750n, 1, { keyId, periods: periodIdsAt(new Date()) })).ok).toBe(true);
    expect(await r.heldByKey(ws, keyId)).toBe(750n);
    await r.release(ws, b);
    expect(await r.heldByKey(ws, keyId)).toBe(0n);
    // The key's sum is gone from the workspace's holds, not left at "0".
    expect(await server.services.redis.hexists(reservationKeys((...p) => server.services.ks.shared(...p), ws).held, `=k:${keyId}`)).toBe(0);
    // Last month's spend does not count this month.
    expect((await r.reserve(ws, randomUUID(), 1000n, 1, { keyId, periods: periodIdsAt(new Date('1999-12-01T00:00:00Z')) })).ok).toBe(true);
  });

  it('null removes the budget; "0" freezes the key; amounts past 2^53 compare exactly', async () => {
    const ws = randomUUID();
    const keyId = randomUUID();
    const big = 2n ** 60n;
    await deposit(ws, big * 4n);
    const r = resv();
    await setBudget(ws, keyId, 0n);
    expect((await r.reserve(ws, randomUUID(), 0n, 1, { keyId, periods: AT })).ok).toBe(true);
    expect((await r.reserve(ws, randomUUID(), 1n, 1, { keyId, periods: AT })).ok).toBe(false);
    await setBudget(ws, keyId, big + 1n);
    expect((await r.reserve(ws, randomUUID(), big, 1, { keyId, periods: AT })).ok).toBe(true);
    expect((await r.reserve(ws, randomUUID(), 2n, 1, { keyId, periods: AT })).ok).toBe(false);
    expect((await r.reserve(ws, randomUUID(), 1n, 1, { keyId, periods: AT })).ok).toBe(true);
    await setBudget(ws, keyId, null);
    expect((await r.reserve(ws, randomUUID(), big, 1, { keyId, periods: AT })).ok).toBe(true);
  });

  it('adds spend and holds exactly across every digit (carries past 2^53)', async () => {
    const ws = randomUUID();
    const keyId = randomUUID();
    await deposit(ws, 2n ** 62n);
    const spent = 999_999_999_999_999_999n;
    await debit(ws, keyId, randomUUID(), spent);
    await setBudget(ws, keyId, spent + 10n);
    const r = resv();
    expect((await r.reserve(ws, randomUUID(), 5n, 1, { keyId, periods: periodIdsAt(new Date()) })).ok).toBe(true);
    const refused = await r.reserve(ws, randomUUID(), 6n, 1, { keyId, periods: periodIdsAt(new Date()) });
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.budget).toEqual({ scope: 'key', period: 'monthly', budget: spent + 10n, spent, heldByOthers: 5n });
    expect((await r.reserve(ws, randomUUID(), 5n, 1, { keyId, periods: periodIdsAt(new Date()) })).ok).toBe(true);
  });
});
