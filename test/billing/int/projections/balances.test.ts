import { balancesProjection } from '../../../../src/billing/projections/balances/projection';
import { getBalance } from '../../../../src/billing/projections/balances/queries';
import { keySpend } from '../../../../src/billing/projections/balances/key-spend';
import type { TokensDebited } from '../../../../src/inference/events';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(balancesProjection);
const debit = (requestId: string, amountNanoUsd: string, created: string) =>
  ({
    type: 'TokensDebited',
    created,
    data: { requestId, workspaceId: 'w1', keyId: 'k1', config: 'service_3_pi', inputTokens: 10, outputTokens: 20, inputPriceNanoUsd: '1', outputPriceNanoUsd: '1', amountNanoUsd },
  }) satisfies TokensDebited & { created: string };

describe('balances projection', () => {
  test('balance = deposits + reloads − debits, each kept apart, exactly (beyond 2^53 nano-USD)', () =>
    spec
      .given(
        { type: 'DepositSucceeded', data: { workspaceId: 'w1', depositId: 'd1', amountNanoUsd: '9007199254740993', paymentIntentId: 'pi_1', by: 'ann' } },
        { type: 'AutoReloadSucceeded', data: { workspaceId: 'w1', reloadId: 'r1', amountNanoUsd: '5000', paymentIntentId: 'pi_2' } },
        debit('q1', '1000', '2026-03-15T12:00:00.000Z'),
        debit('q2', '0', '2026-03-15T12:00:01.000Z'),
      )
      .then(async ({ readModels }) => {
        expect(await getBalance(readModels, 'w1')).toEqual({ balance: 9007199254744993n, deposited: 9007199254740993n, reloaded: 5000n, debited: 1000n });
        expect(await getBalance(readModels, 'other')).toEqual({ balance: 0n, deposited: 0n, reloaded: 0n, debited: 0n });
      }));

  test("a key's spend is counted per UTC month of the debit", () =>
    spec
      .given(debit('q1', '300', '2026-02-28T23:59:59.000Z'), debit('q2', '200', '2026-03-01T00:00:00.000Z'), debit('q3', '100', '2026-03-31T23:00:00.000Z'))
      .then(async ({ readModels }) => {
        expect(await keySpend(readModels, ['k1'], '2026-02')).toEqual(new Map([['k1', 300n]]));
        expect((await keySpend(readModels, ['k1'], '2026-03')).get('k1')).toBe(300n);
      }));

  test("a key's budget is set, changed and removed", () =>
    spec
      .given(
        { type: 'ApiKeyBudgetChanged', data: { workspaceId: 'w1', keyId: 'k1', monthlyBudgetNanoUsd: '100', previousBudgetNanoUsd: null, by: 'ann' } },
        { type: 'ApiKeyBudgetChanged', data: { workspaceId: 'w1', keyId: 'k2', monthlyBudgetNanoUsd: '100', previousBudgetNanoUsd: null, by: 'ann' } },
        { type: 'ApiKeyBudgetChanged', data: { workspaceId: 'w1', keyId: 'k2', monthlyBudgetNanoUsd: '700', previousBudgetNanoUsd: '100', by: 'ann' } },
        { type: 'ApiKeyBudgetChanged', data: { workspaceId: 'w1', keyId: 'k1', monthlyBudgetNanoUsd: null, previousBudgetNanoUsd: '100', by: 'ann' } },
      )
      .then(async ({ readModels }) => {
        const k = await readModels.keys('balances');
        expect(await readModels.redis.get(k('key-budget', 'k1'))).toBeNull();
        expect(await readModels.redis.get(k('key-budget', 'k2'))).toBe('700');
      }));
});
