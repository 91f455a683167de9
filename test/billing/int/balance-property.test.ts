import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { verifyLedger } from '../../../src/cli/ledger';
import { LedgerReplay } from '../../../src/billing/ledger';
import { streams } from '../../../src/platform/streams';
import { getBalance } from '../../../src/billing/projections/balances/queries';
import { balancesProjection } from '../../../src/billing/projections/balances/projection';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { hotPathReadModels } from '../../support/hot-path';
import { ledgerProjection } from '../../../src/billing/projections/ledger/projection';
import { ledgerBalance, ledgerPage } from '../../../src/billing/projections/ledger/queries';
import { rebuildProjection } from '../../../src/platform/projections/rebuild';
import type { Module } from '../../../src/services';
import { startTestServer, TestServer } from '../../support/harness';
import { patience } from '../../support/wait';

/**
 * Property: over random sequences of deposits, reservations, debits, releases and reloads, applied
 * to the real event store and the real projections (Redis), the projected balance always equals
 * the replay of the event store, never goes below zero, and a reservation is granted exactly when
 * the available balance (balance − held) covers it. A rebuild gives the same balances.
 */
let server: TestServer;
const ledgerModule: Module = { name: 'ledger-only', projections: () => [ledgerProjection] };
beforeAll(async () => {
  server = await startTestServer({}, { modules: [hotPathReadModels, ledgerModule] });
});
afterAll(() => server?.close());

type Op =
  | { kind: 'deposit'; cents: number }
  | { kind: 'reload'; cents: number }
  | { kind: 'reserve'; nano: bigint }
  | { kind: 'debit'; pick: number; permille: number }
  | { kind: 'release'; pick: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('deposit' as const), cents: fc.integer({ min: 1, max: 20_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reload' as const), cents: fc.integer({ min: 1_000, max: 5_000 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('reserve' as const),
      // From a fraction of a cent to more than a typical balance, exact nano amounts.
      nano: fc.bigInt({ min: 1n, max: 60_000_000_000n }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('debit' as const), pick: fc.nat(), permille: fc.integer({ min: 0, max: 1000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
);

const NANO_PER_CENT = 10_000_000n;

async function append(stream: string, type: string, data: Record<string, unknown>) {
  const s = server.services;
  const r = await s.store.append(stream, [{ id: randomUUID(), type, data }], { expectedRevision: 'any' });
  expect(await s.progress.waitFor(r.position, patience(10_000))).toBe(true);
}

test('projected balance = replay, never below zero, reservations exact (fast-check, real Redis and SQLite)', async () => {
  const s = server.services;
  const resv = new Reservations(s.redis, s.ks);
  const workspaces: string[] = [];
  let opsRun = 0;
  let granted = 0;
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40, size: 'max' }), async (ops) => {
      const ws = randomUUID();
      workspaces.push(ws);
      let balance = 0n; // the model
      const open = new Map<string, bigint>();
      for (const o of ops) {
        opsRun++;
        switch (o.kind) {
          case 'deposit': {
            const amount = BigInt(o.cents) * NANO_PER_CENT;
            await append(streams.billing(ws), 'DepositSucceeded', {
              workspaceId: ws,
              depositId: randomUUID(),
              amountNanoUsd: amount.toString(),
              paymentIntentId: `pi_${randomUUID()}`,
              by: 'prop',
            });
            balance += amount;
            break;
          }
          case 'reload': {
            const amount = BigInt(o.cents) * NANO_PER_CENT;
            const reloadId = randomUUID();
            await append(streams.billing(ws), 'AutoReloadTriggered', {
              workspaceId: ws,
              reloadId,
              amountNanoUsd: amount.toString(),
              balanceNanoUsd: balance.toString(),
            });
            await append(streams.billing(ws), 'AutoReloadSucceeded', {
              workspaceId: ws,
              reloadId,
              amountNanoUsd: amount.toString(),
              paymentIntentId: `pi_${randomUUID()}`,
            });
            balance += amount;
            break;
          }
          case 'reserve': {
            const held = [...open.values()].reduce((a, b) => a + b, 0n);
            const requestId = randomUUID();
            const r = await resv.reserve(ws, requestId, o.nano, Date.now());
            expect(r.ok).toBe(balance - held >= o.nano);
            if (r.ok) {
              open.set(requestId, o.nano);
              granted++;
            } else refused++;
            break;
          }
          case 'debit': {
            if (!open.size) break;
            const ids = [...open.keys()];
            const requestId = ids[o.pick % ids.length];
            const reserved = open.get(requestId)!;
            // The actual cost is at most what was reserved (prompt + max_tokens at the output price).
            const amount = (reserved * BigInt(o.permille)) / 1000n;
            await append(streams.inference(requestId), 'TokensDebited', {
              requestId,
              workspaceId: ws,
              keyId: 'k',
              config: 'service_3_pi',
              inputTokens: 1,
              outputTokens: 1,
              inputPriceNanoUsd: '2500',
              outputPriceNanoUsd: '10000',
              amountNanoUsd: amount.toString(),
            });
            open.delete(requestId);
            balance -= amount;
            break;
          }
          case 'release': {
            if (!open.size) break;
            const ids = [...open.keys()];
            const requestId = ids[o.pick % ids.length];
            await resv.release(ws, requestId);
            open.delete(requestId);
            break;
          }
        }
        // After every step: projection = model = replay of the store, never negative.
        const projected = await getBalance(s.readModels, ws);
        expect(projected.balance).toBe(balance);
        expect(projected.balance >= 0n).toBe(true);
        const held = await resv.held(ws);
        expect(held).toBe([...open.values()].reduce((a, b) => a + b, 0n));
        expect(projected.balance - held >= 0n).toBe(true);
      }
      const replay = new LedgerReplay();
      for (const e of await s.store.readAll()) replay.apply(e);
      const r = replay.get(ws);
      const projected = await getBalance(s.readModels, ws);
      expect(projected).toEqual({
        balance: r.balance,
        deposited: r.deposited,
        reloaded: r.reloaded,
        granted: r.granted,
        expired: r.expired,
        debited: r.debited,
      });
      expect(r.lowest >= 0n).toBe(true);
      expect(await ledgerBalance(s.readModels, ws)).toBe(r.balance);
      const page = await ledgerPage(s.readModels, ws, 0, 1000);
      expect(page.entries.at(-1)?.balanceNanoUsd ?? '0').toBe(r.balance.toString());
      for (const id of open.keys()) await resv.release(ws, id);
    }),
    { numRuns: Number(process.env.PROP_RUNS ?? 40), seed: process.env.PROP_SEED ? Number(process.env.PROP_SEED) : undefined },
  );

  // A rebuild replays the whole store into a fresh generation: the same balances.
  const before = await Promise.all(workspaces.map((ws) => getBalance(s.readModels, ws)));
  await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection: balancesProjection });
  const after = await Promise.all(workspaces.map((ws) => getBalance(s.readModels, ws)));
  expect(after).toEqual(before);
  const v = await verifyLedger(s.store, s.redis, s.ks);
  expect(v.differences).toEqual([]);
  expect(v.negative).toEqual([]);
  console.log(
    `balance property: ${workspaces.length} sequences, ${opsRun} operations, ${granted} reservations granted, ${refused} refused; verify: ${v.workspaces} workspaces, 0 differences`,
  );
});

test('ledger verify fails on a projection that drifted from the store', async () => {
  const s = server.services;
  const ws = randomUUID();
  await append(streams.billing(ws), 'DepositSucceeded', {
    workspaceId: ws,
    depositId: randomUUID(),
    amountNanoUsd: '100000000000',
    paymentIntentId: 'pi_x',
    by: 'prop',
  });
  const k = (await s.readModels.keys('balances')).ws(ws);
  await s.redis.hincrby(k, 'balance', 1); // one nano-dollar too many
  const v = await verifyLedger(s.store, s.redis, s.ks);
  expect(v.differences).toEqual([
    { workspaceId: ws, projection: 'balances', field: 'balance', replayed: '100000000000', projected: '100000000001' },
  ]);
  await s.redis.hincrby(k, 'balance', -1);
  expect((await verifyLedger(s.store, s.redis, s.ks)).differences).toEqual([]);
});
