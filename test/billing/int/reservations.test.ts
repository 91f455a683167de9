import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { usd } from '../../../src/platform/money';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { getBalance } from '../../../src/billing/projections/balances/queries';
import { coreReadModels } from '../../../src/core-read-models';
import { debitData } from '../../support/debit';
import { startTestServer, TestServer } from '../../support/harness';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { modules: [coreReadModels] });
});
afterAll(() => server.close());

async function append(stream: string, type: string, data: Record<string, unknown>) {
  const s = server.services;
  const r = await s.store.append(stream, [{ id: randomUUID(), type, data }], { expectedRevision: 'any' });
  expect(await s.progress.waitFor(r.position, 5000)).toBe(true);
}

const deposit = (ws: string, amount: bigint) =>
  append(streams.billing(ws), 'DepositSucceeded', {
    workspaceId: ws,
    depositId: randomUUID(),
    amountNanoUsd: amount.toString(),
    paymentIntentId: 'pi_test',
    by: 'u1',
  });

describe('reservations against the projected balance', () => {
  it('holds exactly what the balance covers when 200 requests race for it', async () => {
    const ws = randomUUID();
    await deposit(ws, usd(1));
    const resv = new Reservations(server.services.redis, server.services.ks);
    const each = usd(1) / 100n;
    const results = await Promise.all(
      Array.from({ length: 200 }, () => resv.reserve(ws, randomUUID(), each, Date.now())),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(100);
    expect(await resv.held(ws)).toBe(usd(1));
    const refused = results.find((r) => !r.ok);
    expect(refused && !refused.ok && refused.available).toBe(0n);
  });

  it('moves a reservation to spent when the debit is projected, and a release frees it', async () => {
    const ws = randomUUID();
    await deposit(ws, usd(2));
    const resv = new Reservations(server.services.redis, server.services.ks);
    const [a, b] = [randomUUID(), randomUUID()];
    expect((await resv.reserve(ws, a, usd(1), 1)).ok).toBe(true);
    expect((await resv.reserve(ws, b, usd(1), 2)).ok).toBe(true);
    expect((await resv.reserve(ws, randomUUID(), 1n, 3)).ok).toBe(false);
    expect(await resv.openBefore(10)).toEqual(
      expect.arrayContaining([
        { workspaceId: ws, requestId: a },
        { workspaceId: ws, requestId: b },
      ]),
    );

    await append(streams.inference(a), 'TokensDebited', {
      requestId: a,
      workspaceId: ws,
      keyId: 'k1',
      config: 'service_3_pi',
      inputTokens: 10,
      outputTokens: 5,
      inputPriceNanoUsd: '2500',
      outputPriceNanoUsd: '10000',
      amountNanoUsd: '75000',
    });
    expect(await resv.held(ws)).toBe(usd(1));
    const bal = await getBalance(server.services.readModels, ws);
    expect(bal.balance).toBe(usd(2) - 75000n);
    expect(bal.debited).toBe(75000n);

    await resv.release(ws, b);
    expect(await resv.held(ws)).toBe(0n);
    expect((await resv.openBefore(10)).filter((o) => o.workspaceId === ws)).toEqual([]);
    expect((await resv.reserve(ws, randomUUID(), usd(2) - 75000n, 4)).ok).toBe(true);
  });

  // One RELEASE script for the api (Reservations.release) and the projector (TokensDebited): it
  // frees the hold once, and always drops the sweeper's index entry, whatever state it finds.
  it('a hold released twice, or released and then debited, is freed once', async () => {
    const ws = randomUUID();
    await deposit(ws, usd(3));
    const resv = new Reservations(server.services.redis, server.services.ks);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of [a, b, c]) expect((await resv.reserve(ws, id, usd(1), 1, { keyId: 'k-twice', month: '2026-11' })).ok).toBe(true);
    await resv.release(ws, a);
    await resv.release(ws, a);
    expect(await resv.held(ws)).toBe(usd(2));
    expect(await resv.heldByKey(ws, 'k-twice')).toBe(usd(2));
    // The sweeper released b, then the request's own debit is projected: nothing is freed twice.
    await resv.release(ws, b);
    await append(streams.inference(b), 'TokensDebited', debitData(ws, { requestId: b, keyId: 'k-twice' }));
    expect(await resv.held(ws)).toBe(usd(1));
    expect(await resv.heldByKey(ws, 'k-twice')).toBe(usd(1));
    expect((await resv.openBefore(10)).filter((o) => o.workspaceId === ws)).toEqual([{ workspaceId: ws, requestId: c }]);
  });

  it("the sweeper's index entry goes with the debit even when the hold itself was lost", async () => {
    const ws = randomUUID();
    await deposit(ws, usd(1));
    const resv = new Reservations(server.services.redis, server.services.ks);
    const [a, b] = [randomUUID(), randomUUID()];
    expect((await resv.reserve(ws, a, 1000n, 1)).ok).toBe(true);
    expect((await resv.reserve(ws, b, 1000n, 1)).ok).toBe(true);
    // Redis lost the holds but kept the index (eviction under allkeys-*, a partial restore).
    await server.services.redis.del(server.services.ks.shared('resv', ws));
    await append(streams.inference(a), 'TokensDebited', debitData(ws, { requestId: a }));
    await resv.release(ws, b);
    expect((await resv.openBefore(10)).filter((o) => o.workspaceId === ws)).toEqual([]);
  });

  it('compares amounts beyond 2^53 nano-USD exactly', async () => {
    const ws = randomUUID();
    const big = 2n ** 60n + 1n;
    await deposit(ws, big);
    const resv = new Reservations(server.services.redis, server.services.ks);
    expect((await resv.reserve(ws, randomUUID(), big + 1n, 1)).ok).toBe(false);
    expect((await resv.reserve(ws, randomUUID(), big, 1)).ok).toBe(true);
  });
});
