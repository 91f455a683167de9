import { ledgerProjection } from '../../../../src/billing/projections/ledger/projection';
import { ledgerBalance, ledgerPage } from '../../../../src/billing/projections/ledger/queries';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(ledgerProjection);

describe('ledger projection', () => {
  test('every money event in order, each with the exact running balance after it', () =>
    spec
      .given(
        {
          type: 'DepositSucceeded',
          data: { workspaceId: 'w1', depositId: 'd1', amountNanoUsd: '9007199254740993', paymentIntentId: 'pi_1', by: 'ann' },
        },
        {
          type: 'TokensDebited',
          data: {
            requestId: 'q1',
            workspaceId: 'w1',
            keyId: 'k1',
            config: 'service_3_pi',
            inputTokens: 3,
            outputTokens: 4,
            inputPriceNanoUsd: '1',
            outputPriceNanoUsd: '1',
            amountNanoUsd: '7',
          },
        },
        { type: 'AutoReloadSucceeded', data: { workspaceId: 'w1', reloadId: 'r1', amountNanoUsd: '10', paymentIntentId: 'pi_2' } },
      )
      .then(async ({ readModels }) => {
        const page = await ledgerPage(readModels, 'w1', 0, 10);
        expect(page.total).toBe(3);
        expect(page.next).toBeNull();
        expect(page.entries.map((e) => [e.position, e.type, e.ref, e.amountNanoUsd, e.balanceNanoUsd])).toEqual([
          ['1', 'DepositSucceeded', 'd1', '9007199254740993', '9007199254740993'],
          ['2', 'TokensDebited', 'q1', '-7', '9007199254740986'],
          ['3', 'AutoReloadSucceeded', 'r1', '10', '9007199254740996'],
        ]);
        expect(page.entries[1]).toMatchObject({ keyId: 'k1', model: 'service_3_pi', inputTokens: 3, outputTokens: 4 });
        expect(await ledgerBalance(readModels, 'w1')).toBe(9007199254740996n);
        expect((await ledgerPage(readModels, 'w1', 1, 1)).next).toBe(2);
      }));
});
