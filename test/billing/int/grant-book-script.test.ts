import fc from 'fast-check';
import { balancesProjection } from '../../../src/billing/projections/balances/projection';
import { ledgerProjection } from '../../../src/billing/projections/ledger/projection';
import { ledgerPage } from '../../../src/billing/projections/ledger/queries';
import { LedgerReplay, type MoneyEvent } from '../../../src/billing/ledger';
import { GrantBook } from '../../../src/billing/grants';
import type { EventRecord } from '../../../src/platform/event';
import { projectionSpec, type Given } from '../../support/projection-gwt';

/**
 * The grant book has three copies: grants.ts (the replay `tollgate ledger` runs) and the Lua book
 * in the balances and in the ledger read models (src/billing/projections/grants/grant-book.inc.lua).
 * Over random histories of deposits, grants of every priority and expiry, debits at any time and
 * recorded expiries, all three must give the same split of every debit and the same amounts left.
 */
const T0 = Date.parse('2026-03-15T12:00:00.000Z');
const ledger = projectionSpec(ledgerProjection);
const balances = projectionSpec(balancesProjection);

type Step =
  | { kind: 'deposit'; amount: number }
  | { kind: 'grant'; amount: number; priority: number; expiresIn: number | null }
  | { kind: 'debit'; amount: number }
  | { kind: 'expire'; nth: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('deposit' as const), amount: fc.integer({ min: 1, max: 5000 }) }),
  fc.record({
    kind: fc.constant('grant' as const),
    amount: fc.integer({ min: 1, max: 5000 }),
    priority: fc.constantFrom(1, 10, 50, 51, 100),
    expiresIn: fc.option(fc.integer({ min: 1, max: 40 }), { nil: null }),
  }),
  fc.record({ kind: fc.constant('debit' as const), amount: fc.integer({ min: 0, max: 3000 }) }),
  fc.record({ kind: fc.constant('expire' as const), nth: fc.nat(30) }),
);

/** The history as events, one a second (the debits' times decide which grants are past their expiry). */
function eventsOf(steps: Step[]): Given<MoneyEvent>[] {
  const out: Given<MoneyEvent>[] = [];
  const grants: string[] = [];
  steps.forEach((s, i) => {
    const created = new Date(T0 + i * 1000).toISOString();
    const workspaceId = 'w1';
    if (s.kind === 'deposit') {
      const depositId = `d${i}`;
      out.push({
        type: 'DepositSucceeded',
        created,
        data: { workspaceId, depositId, amountNanoUsd: String(s.amount), paymentIntentId: `pi_${i}`, by: 'ann' },
      });
    } else if (s.kind === 'grant') {
      const grantId = `g${i}`;
      grants.push(grantId);
      const expiresAt = s.expiresIn === null ? null : new Date(T0 + (i + s.expiresIn) * 1000).toISOString();
      out.push({
        type: 'CreditGranted',
        created,
        data: {
          workspaceId,
          grantId,
          category: 'promotional',
          amountNanoUsd: String(s.amount),
          priority: s.priority,
          expiresAt,
          note: '',
          by: 'operator',
        },
      });
    } else if (s.kind === 'debit') {
      out.push({
        type: 'TokensDebited',
        created,
        data: {
          requestId: `q${i}`,
          workspaceId,
          keyId: 'k1',
          config: 'service_3_pi',
          inputTokens: 1,
          outputTokens: 1,
          inputPriceNanoUsd: '1',
          outputPriceNanoUsd: '1',
          amountNanoUsd: String(s.amount),
        },
      });
    } else if (grants.length) {
      out.push({ type: 'CreditExpired', created, data: { workspaceId, grantId: grants[s.nth % grants.length], expiresAt: created } });
    }
  });
  return out;
}

function replay(events: Given<MoneyEvent>[]): { replay: LedgerReplay; lines: ReturnType<LedgerReplay['apply']>[] } {
  const r = new LedgerReplay();
  const lines = events.map((e, i) => r.apply({ ...e, position: BigInt(i + 1), created: e.created! } as EventRecord<MoneyEvent>));
  return { replay: r, lines };
}

describe('the grant book: grants.ts and both Lua books agree', () => {
  test('debits draw by priority, then soonest expiry, then oldest; expired grants only for what the others cannot cover', () => {
    const book = new GrantBook();
    const g = (grantId: string, amount: bigint, priority: number, expiresAt: string | null, position: bigint) =>
      book.add({ grantId, category: 'promotional', amount, priority, expiresAt, position, at: '' });
    g('paid', 100n, 50, null, 1n);
    g('late', 10n, 10, '2026-03-20T00:00:00.000Z', 2n);
    g('soon', 10n, 10, '2026-03-16T00:00:00.000Z', 3n);
    g('first', 5n, 1, null, 4n);
    g('gone', 7n, 1, '2026-03-15T00:00:00.000Z', 5n);
    expect(book.draw(22n, '2026-03-15T12:00:00.000Z').draws).toEqual([
      { grantId: 'first', amount: 5n },
      { grantId: 'soon', amount: 10n },
      { grantId: 'late', amount: 7n },
    ]);
    expect(book.draw(105n, '2026-03-15T12:00:00.000Z')).toEqual({
      draws: [
        { grantId: 'late', amount: 3n },
        { grantId: 'paid', amount: 100n },
        { grantId: 'gone', amount: 2n },
      ],
      uncovered: 0n,
    });
    expect(book.expire('gone')).toBe(5n);
    expect(book.spendable('2026-03-15T12:00:00.000Z')).toBe(0n);
  });

  test('random histories: the ledger read model shows the replay’s split and amounts, the balances book holds what is left', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const events = eventsOf(steps);
        if (!events.length) return;
        const { replay: r, lines } = replay(events);
        await ledger.given(...events).then(async ({ readModels }) => {
          const page = await ledgerPage(readModels, 'w1', 0, 1000);
          expect(
            page.entries.map((e) => ({ ref: e.ref, amount: e.amountNanoUsd, balance: e.balanceNanoUsd, drawn: e.drawn ?? null })),
          ).toEqual(
            lines.map((l) => ({
              ref: l!.ref,
              amount: l!.amount.toString(),
              balance: l!.balance.toString(),
              drawn: l!.drawn ? l!.drawn.map((d) => ({ grantId: d.grantId, amountNanoUsd: d.amount.toString() })) : null,
            })),
          );
        });
        await balances.given(...events).then(async ({ redis, readModels }) => {
          const k = await readModels.keys('balances');
          const h = await redis.hgetall(k.ws('w1'));
          const left = Object.fromEntries(Object.entries(h).filter(([f]) => f.startsWith('g:')));
          const expected = Object.fromEntries(
            [...r.book('w1').grants.values()].filter((g) => g.remaining > 0n).map((g) => [`g:${g.grantId}`, g.remaining.toString()]),
          );
          expect(left).toEqual(expected);
          expect(h.balance ?? '0').toBe(r.get('w1').balance.toString());
          const withExpiry = [...r.book('w1').grants.values()].filter((g) => g.remaining > 0n && g.expiresAt !== null);
          const list = withExpiry.map((g) => `${Date.parse(g.expiresAt!)}:${g.grantId}`).sort();
          expect(h.expiring ?? '').toBe(list.join(' '));
        });
      }),
      { numRuns: 40 },
    );
  });
});
