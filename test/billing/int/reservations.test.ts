import { randomUUID } from 'node:crypto';
import { periodIdsAt } from '../../../src/platform/budget-periods';
import { streams } from '../../../src/platform/streams';
import { usd } from '../../../src/platform/money';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { getBalance } from '../../../src/billing/projections/balances/queries';
import { hotPathReadModels } from '../../support/hot-path';
import { debitData } from '../../support/debit';
import { startTestServer, TestServer } from '../../support/harness';
import { patience } from '../../support/wait';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { modules: [hotPathReadModels] });
});
afterAll(() => server.close());

async function append(stream: string, type: string, data: Record<string, unknown>) {
  const s = server.services;
  const r = await s.store.append(stream, [{ id: randomUUID(), type, data }], { expectedRevision: 'any' });
  expect(await s.progress.waitFor(r.position, patience(5000))).toBe(true);
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
    const results = await Promise.all(Array.from({ length: 200 }, () => resv.reserve(ws, randomUUID(), each, Date.now())));
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
    for (const id of [a, b, c])
      expect((await resv.reserve(ws, id, usd(1), 1, { keyId: 'k-twice', periods: periodIdsAt(new Date()) })).ok).toBe(true);
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

  // Settlement without the projector: the api turns a recorded request's hold into its settled cost
  // (pending) at once; the projector's TokensDebited clears it. Credit is never held for projector lag.
  it('a settled hold counts only its cost until the debit is projected, which clears it exactly once', async () => {
    const ws = randomUUID();
    await deposit(ws, usd(2));
    const resv = new Reservations(server.services.redis, server.services.ks);
    const [a, b] = [randomUUID(), randomUUID()];
    const opts = { keyId: 'k-settle', periods: periodIdsAt(new Date()) };
    expect((await resv.reserve(ws, a, usd(1), 1, opts)).ok).toBe(true);
    expect((await resv.reserve(ws, b, usd(1), 1, opts)).ok).toBe(true);
    // The balance is fully held: without settlement a third request waits for the projector (402).
    expect((await resv.reserve(ws, randomUUID(), usd(1) / 2n, 2)).ok).toBe(false);
    // a's completion is recorded (cost 75,000 nano-USD); the projector has not applied it yet.
    expect(await resv.markPending(ws, a, 75000n)).toBe(true);
    expect(await resv.markPending(ws, a, 75000n)).toBe(true); // a retry changes nothing
    expect(await resv.held(ws)).toBe(usd(1) + 75000n);
    expect(await resv.heldByKey(ws, 'k-settle')).toBe(usd(1) + 75000n);
    const c = randomUUID();
    expect((await resv.reserve(ws, c, usd(1) - 75000n, 3)).ok).toBe(true);
    expect((await resv.reserve(ws, randomUUID(), 1n, 3)).ok).toBe(false); // never below zero
    // The projector applies a's debit: balance − 75,000, pending cleared, nothing freed twice.
    await append(streams.inference(a), 'TokensDebited', debitData(ws, { requestId: a, keyId: 'k-settle', amountNanoUsd: 75000n }));
    expect(await resv.held(ws)).toBe(usd(2) - 75000n);
    expect(await resv.heldByKey(ws, 'k-settle')).toBe(usd(1));
    expect((await getBalance(server.services.readModels, ws)).balance).toBe(usd(2) - 75000n);
    // A settle that arrives after the projector (its process was slow): the hold is gone, no-op.
    expect(await resv.markPending(ws, a, 75000n)).toBe(false);
    expect(await resv.held(ws)).toBe(usd(2) - 75000n);
    // b's api process died between its completion append and the settle step: the projector still
    // settles it, once (its TokensDebited releases the full hold and debits the cost).
    await append(streams.inference(b), 'TokensDebited', debitData(ws, { requestId: b, keyId: 'k-settle', amountNanoUsd: 5000n }));
    expect(await resv.held(ws)).toBe(usd(1) - 75000n);
    expect((await getBalance(server.services.readModels, ws)).balance).toBe(usd(2) - 80000n);
    await resv.release(ws, c);
    expect(await resv.held(ws)).toBe(0n);
    expect(await resv.heldByKey(ws, 'k-settle')).toBe(0n);
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
