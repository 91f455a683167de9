import { balancesProjection } from '../../../../src/billing/projections/balances/projection';
import { getBalance } from '../../../../src/billing/projections/balances/queries';
import { keySpend, memberBudgets } from '../../../../src/billing/projections/balances/queries';
import type { TokensDebited } from '../../../../src/inference/events';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(balancesProjection);
const debit = (requestId: string, amountNanoUsd: string, created: string) =>
  ({
    type: 'TokensDebited',
    created,
    data: {
      requestId,
      workspaceId: 'w1',
      keyId: 'k1',
      config: 'service_3_pi',
      inputTokens: 10,
      outputTokens: 20,
      inputPriceNanoUsd: '1',
      outputPriceNanoUsd: '1',
      amountNanoUsd,
    },
  }) satisfies TokensDebited & { created: string };

describe('balances projection', () => {
  test('balance = deposits + reloads − debits, each kept apart, exactly (beyond 2^53 nano-USD)', () =>
    spec
      .given(
        {
          type: 'DepositSucceeded',
          data: { workspaceId: 'w1', depositId: 'd1', amountNanoUsd: '9007199254740993', paymentIntentId: 'pi_1', by: 'ann' },
        },
        { type: 'AutoReloadSucceeded', data: { workspaceId: 'w1', reloadId: 'r1', amountNanoUsd: '5000', paymentIntentId: 'pi_2' } },
        debit('q1', '1000', '2026-03-15T12:00:00.000Z'),
        debit('q2', '0', '2026-03-15T12:00:01.000Z'),
      )
      .then(async ({ readModels }) => {
        expect(await getBalance(readModels, 'w1')).toEqual({
          balance: 9007199254744993n,
          deposited: 9007199254740993n,
          reloaded: 5000n,
          granted: 0n,
          expired: 0n,
          debited: 1000n,
        });
        expect(await getBalance(readModels, 'other')).toEqual({
          balance: 0n,
          deposited: 0n,
          reloaded: 0n,
          granted: 0n,
          expired: 0n,
          debited: 0n,
        });
      }));

  test("a key's spend is counted per UTC month of the debit", () =>
    spec
      .given(
        debit('q1', '300', '2026-02-28T23:59:59.000Z'),
        debit('q2', '200', '2026-03-01T00:00:00.000Z'),
        debit('q3', '100', '2026-03-31T23:00:00.000Z'),
      )
      .then(async ({ readModels }) => {
        expect(await keySpend(readModels, 'w1', ['k1'], '2026-02')).toEqual(new Map([['k1', 300n]]));
        expect((await keySpend(readModels, 'w1', ['k1'], '2026-03')).get('k1')).toBe(300n);
      }));

  test("a key's budget is set, changed and removed", () =>
    spec
      .given(
        {
          type: 'ApiKeyBudgetChanged',
          data: { workspaceId: 'w1', keyId: 'k1', monthlyBudgetNanoUsd: '100', previousBudgetNanoUsd: null, by: 'ann' },
        },
        {
          type: 'ApiKeyBudgetChanged',
          data: { workspaceId: 'w1', keyId: 'k2', monthlyBudgetNanoUsd: '100', previousBudgetNanoUsd: null, by: 'ann' },
        },
        {
          type: 'ApiKeyBudgetChanged',
          data: { workspaceId: 'w1', keyId: 'k2', monthlyBudgetNanoUsd: '700', previousBudgetNanoUsd: '100', by: 'ann' },
        },
        {
          type: 'ApiKeyBudgetChanged',
          data: { workspaceId: 'w1', keyId: 'k1', monthlyBudgetNanoUsd: null, previousBudgetNanoUsd: '100', by: 'ann' },
        },
      )
      .then(async ({ readModels }) => {
        const k = await readModels.keys('balances');
        expect(await readModels.redis.get(k.ws('w1', 'key-budget', 'k1'))).toBeNull();
        expect(await readModels.redis.get(k.ws('w1', 'key-budget', 'k2'))).toBe('700');
      }));

  test("a debit counts in its day, its ISO week (Monday, UTC) and its month, for the key and for the key's creator", () =>
    spec
      .given(
        {
          type: 'ApiKeyCreated',
          data: {
            workspaceId: 'w1',
            keyId: 'k1',
            name: 'one',
            keyHash: 'h1',
            prefix: 'p',
            last4: '1111',
            scopes: ['inference'],
            expiresAt: null,
            createdBy: 'bob',
          },
        },
        {
          type: 'ApiKeyCreated',
          data: {
            workspaceId: 'w1',
            keyId: 'k2',
            name: 'two',
            keyHash: 'h2',
            prefix: 'p',
            last4: '2222',
            scopes: ['inference'],
            expiresAt: null,
            createdBy: 'bob',
          },
        },
        {
          type: 'MemberBudgetChanged',
          data: {
            workspaceId: 'w1',
            userId: 'bob',
            budgetNanoUsd: '5000',
            period: 'weekly',
            previousBudgetNanoUsd: null,
            previousPeriod: null,
            by: 'ann',
          },
        },
        // Sunday 2026-03-01 23:59:59 is in ISO week 9; Monday 2026-03-02 00:00 starts week 10.
        debit('q1', '300', '2026-03-01T23:59:59.000Z'),
        debit('q2', '200', '2026-03-02T00:00:00.000Z'),
        { ...debit('q3', '50', '2026-03-02T10:00:00.000Z'), data: { ...debit('q3', '50', '').data, keyId: 'k2' } },
      )
      .then(async ({ readModels, ks }) => {
        expect((await keySpend(readModels, 'w1', ['k1'], '2026-03-01')).get('k1')).toBe(300n);
        expect((await keySpend(readModels, 'w1', ['k1'], '2026-03-02')).get('k1')).toBe(200n);
        expect((await keySpend(readModels, 'w1', ['k1'], '2026-W09')).get('k1')).toBe(300n);
        expect((await keySpend(readModels, 'w1', ['k1'], '2026-W10')).get('k1')).toBe(200n);
        expect((await keySpend(readModels, 'w1', ['k1'], '2026-03')).get('k1')).toBe(500n);
        // Bob's budget sees both of his keys, in its own period (the week of 2026-03-02).
        const bob = (await memberBudgets(readModels, ks, 'w1', ['bob', 'ann'], new Date('2026-03-04T00:00:00Z'))).get('bob');
        expect(bob).toEqual({
          budget: 5000n,
          period: 'weekly',
          periodId: '2026-W10',
          resetsAt: '2026-03-09T00:00:00.000Z',
          spent: 250n,
          held: 0n,
        });
        expect((await memberBudgets(readModels, ks, 'w1', ['ann'], new Date())).size).toBe(0);
      }));

  test('a V2 budget keeps its period beside the amount; monthly and removal leave no period behind', () =>
    spec
      .given(
        {
          type: 'ApiKeyBudgetChangedV2',
          data: {
            workspaceId: 'w1',
            keyId: 'k1',
            budgetNanoUsd: '100',
            period: 'daily',
            previousBudgetNanoUsd: null,
            previousPeriod: null,
            by: 'ann',
          },
        },
        {
          type: 'ApiKeyBudgetChangedV2',
          data: {
            workspaceId: 'w1',
            keyId: 'k2',
            budgetNanoUsd: '100',
            period: 'weekly',
            previousBudgetNanoUsd: null,
            previousPeriod: null,
            by: 'ann',
          },
        },
        {
          type: 'ApiKeyBudgetChanged',
          data: { workspaceId: 'w1', keyId: 'k2', monthlyBudgetNanoUsd: '300', previousBudgetNanoUsd: '100', by: 'ann' },
        },
        {
          type: 'MemberBudgetChanged',
          data: {
            workspaceId: 'w1',
            userId: 'bob',
            budgetNanoUsd: '5',
            period: 'daily',
            previousBudgetNanoUsd: null,
            previousPeriod: null,
            by: 'ann',
          },
        },
        {
          type: 'MemberBudgetChanged',
          data: {
            workspaceId: 'w1',
            userId: 'bob',
            budgetNanoUsd: null,
            period: null,
            previousBudgetNanoUsd: '5',
            previousPeriod: 'daily',
            by: 'ann',
          },
        },
      )
      .then(async ({ readModels }) => {
        const k = await readModels.keys('balances');
        const r = readModels.redis;
        expect([await r.get(k.ws('w1', 'key-budget', 'k1')), await r.get(k.ws('w1', 'key-budget-period', 'k1'))]).toEqual(['100', 'daily']);
        expect([await r.get(k.ws('w1', 'key-budget', 'k2')), await r.get(k.ws('w1', 'key-budget-period', 'k2'))]).toEqual(['300', null]);
        expect([await r.get(k.ws('w1', 'member-budget', 'bob')), await r.get(k.ws('w1', 'member-budget-period', 'bob'))]).toEqual([
          null,
          null,
        ]);
      }));
});
