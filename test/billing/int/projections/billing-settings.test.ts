import { billingSettingsProjection } from '../../../../src/billing/projections/billing-settings/projection';
import { getBillingSettings, workspacesWithReloadInFlight } from '../../../../src/billing/projections/billing-settings/queries';
import type { BillingEvent } from '../../../../src/billing/events';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(billingSettingsProjection);
const card: BillingEvent = {
  type: 'PaymentMethodAttached',
  data: { workspaceId: 'w1', paymentMethodId: 'pm_1', brand: 'visa', last4: '4242', customerId: 'cus_1', gateway: 'stripe' },
};
const autoReload: BillingEvent = {
  type: 'AutoReloadConfigured',
  data: { workspaceId: 'w1', enabled: true, thresholdNanoUsd: '100', amountNanoUsd: '500', monthlyCapNanoUsd: null, by: 'ann' },
};
const triggered = (reloadId: string, created: string) =>
  ({
    type: 'AutoReloadTriggered',
    created,
    data: { workspaceId: 'w1', reloadId, amountNanoUsd: '500', balanceNanoUsd: '50' },
  }) satisfies BillingEvent & { created: string };

describe('billing-settings projection', () => {
  test('the card and the auto-reload settings on file, with the revision and position they reflect', () =>
    spec.given(card, autoReload).then(async ({ readModels }) => {
      expect(await getBillingSettings(readModels, 'w1', '2026-03')).toMatchObject({
        paymentMethod: { id: 'pm_1', brand: 'visa', last4: '4242', gateway: 'stripe' },
        customerId: 'cus_1',
        autoReload: { enabled: true, threshold: 100n, amount: 500n, monthlyCap: null },
        suspended: null,
        inFlight: null,
        revision: 1n,
        position: 2n,
      });
    }));

  test('a triggered reload is in flight until its outcome; a failed one no longer counts in its month', () =>
    spec
      .given(card, autoReload, triggered('r1', '2026-03-10T00:00:00.000Z'))
      .then(async ({ readModels }) => {
        expect((await getBillingSettings(readModels, 'w1', '2026-03')).inFlight).toEqual({
          reloadId: 'r1',
          since: '2026-03-10T00:00:00.000Z',
        });
        expect(await workspacesWithReloadInFlight(readModels)).toEqual(['w1']);
      })
      .then(() =>
        spec
          .given(
            card,
            autoReload,
            triggered('r1', '2026-03-10T00:00:00.000Z'),
            { type: 'AutoReloadSucceeded', data: { workspaceId: 'w1', reloadId: 'r1', amountNanoUsd: '500', paymentIntentId: 'pi_1' } },
            triggered('r2', '2026-03-11T00:00:00.000Z'),
            {
              type: 'AutoReloadFailed',
              data: {
                workspaceId: 'w1',
                reloadId: 'r2',
                amountNanoUsd: '500',
                paymentIntentId: null,
                reason: 'declined',
                code: 'card_declined',
              },
            },
            {
              type: 'AutoReloadSuspended',
              data: { workspaceId: 'w1', reloadId: 'r2', reason: 'The card was declined.' },
              created: '2026-03-11T00:00:05.000Z',
            },
          )
          .then(async ({ readModels }) => {
            const s = await getBillingSettings(readModels, 'w1', '2026-03');
            expect(s.inFlight).toBeNull();
            expect(s.reloadedThisMonth).toBe(500n);
            expect(s.suspended).toEqual({ reason: 'The card was declined.', at: '2026-03-11T00:00:05.000Z', reloadId: 'r2' });
            expect(await workspacesWithReloadInFlight(readModels)).toEqual([]);
          }),
      ));
});
