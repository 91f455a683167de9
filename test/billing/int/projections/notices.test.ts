import { autoReloadNoticeId, billingNoticesProjection, noticesKey } from '../../../../src/billing/projections/notices/projection';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(billingNoticesProjection);
const suspended = {
  type: 'AutoReloadSuspended',
  data: { workspaceId: 'w1', reloadId: 'r1', reason: 'The card was declined.' },
  created: '2026-03-11T00:00:00.000Z',
} as const;

describe('billing-notices projection', () => {
  test("a suspension posts one notice for the workspace's admins", () =>
    spec.given(suspended).then(async ({ redis, ks }) => {
      const notices = await redis.hgetall(noticesKey((...p) => ks.shared(...p), 'w1'));
      expect(Object.keys(notices)).toEqual([autoReloadNoticeId('w1')]);
      expect(JSON.parse(notices[autoReloadNoticeId('w1')])).toEqual({
        id: autoReloadNoticeId('w1'),
        kind: 'auto_reload_suspended',
        message: 'Auto-reload is suspended for this workspace. The card was declined.',
        workspaceId: 'w1',
        audience: 'admins',
        created: '2026-03-11T00:00:00.000Z',
        reloadId: 'r1',
      });
    }));

  test('a new card, or the settings saved again, takes the notice down', () =>
    spec
      .given(suspended, {
        type: 'PaymentMethodAttached',
        data: { workspaceId: 'w1', paymentMethodId: 'pm_2', brand: 'visa', last4: '4242', customerId: null, gateway: 'sandbox' },
      })
      .then(async ({ redis, ks }) => expect(await redis.hgetall(noticesKey((...p) => ks.shared(...p), 'w1'))).toEqual({}))
      .then(() =>
        spec
          .given(suspended, {
            type: 'AutoReloadConfigured',
            data: { workspaceId: 'w1', enabled: false, thresholdNanoUsd: '0', amountNanoUsd: '0', monthlyCapNanoUsd: null, by: 'ann' },
          })
          .then(async ({ redis, ks }) => expect(await redis.hgetall(noticesKey((...p) => ks.shared(...p), 'w1'))).toEqual({})),
      ));
});
