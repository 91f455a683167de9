import type { BillingEvent } from '../../events';
import { monthOf } from '../../state';
import { assertNever } from '../../../platform/event';
import { projection, type ProjectionTx } from '../../../platform/projections/projection';
import { luaScript } from '../../../platform/redis-scripts';

export const BILLING_SETTINGS = 'billing-settings';

/**
 * What is on file per workspace: the card, the auto-reload settings and their state (suspended, a
 * reload in flight). GET …/billing and the auto-reload reactor read it.
 *
 *   rm:billing-settings:{gen}:ws:{wsId}          hash: pm, brand, last4, customer, gateway,
 *                                                 arEnabled (1|0), arThreshold, arAmount, arCap ("" = none),
 *                                                 suspendedReason, suspendedAt, suspendedReloadId,
 *                                                 inFlight (reloadId), inFlightSince, rev, position
 *   rm:billing-settings:{gen}:ws:{wsId}:months   hash: "YYYY-MM" → nano-USD of reloads triggered and not failed
 *   rm:billing-settings:{gen}:ws:{wsId}:reloads  hash: reloadId → "YYYY-MM" it was triggered in
 *   rm:billing-settings:{gen}:inflight           set of workspace ids with a reload in flight (the worker's sweep)
 */
export const FAIL = luaScript('billing/projections/billing-settings/reload-failed.lua', {
  keys: ['months', 'reloads'],
  args: ['reloadId', 'amount'],
});

export const billingSettingsProjection = projection<BillingEvent>()({
  name: BILLING_SETTINGS,
  handles: [
    'PaymentMethodAttached',
    'DepositRequested',
    'DepositSucceeded',
    'DepositFailed',
    'AutoReloadConfigured',
    'AutoReloadTriggered',
    'AutoReloadSucceeded',
    'AutoReloadFailed',
    'AutoReloadSuspended',
  ],
  apply(event, tx) {
    const ws = event.data.workspaceId;
    const key = tx.key('ws', ws);
    const m = tx.multi;
    m.hset(key, 'rev', event.revision.toString(), 'position', event.position.toString());
    switch (event.type) {
      case 'PaymentMethodAttached': {
        const d = event.data;
        m.hset(key, { pm: d.paymentMethodId, brand: d.brand, last4: d.last4, gateway: d.gateway });
        if (d.customerId) m.hset(key, 'customer', d.customerId);
        m.hdel(key, 'suspendedReason', 'suspendedAt', 'suspendedReloadId');
        break;
      }
      case 'DepositSucceeded': {
        const d = event.data;
        m.hincrby(key, 'depositsSucceeded', 1).hset(key, 'lastDepositAt', event.created, 'lastDepositId', d.depositId);
        break;
      }
      case 'AutoReloadConfigured': {
        const d = event.data;
        m.hset(key, {
          arEnabled: d.enabled ? '1' : '0',
          arThreshold: d.thresholdNanoUsd,
          arAmount: d.amountNanoUsd,
          arCap: d.monthlyCapNanoUsd ?? '',
        });
        m.hdel(key, 'suspendedReason', 'suspendedAt', 'suspendedReloadId');
        break;
      }
      case 'AutoReloadTriggered': {
        const d = event.data;
        const month = monthOf(event.created);
        m.hset(key, 'inFlight', d.reloadId, 'inFlightSince', event.created);
        m.hincrby(tx.key('ws', ws, 'months'), month, d.amountNanoUsd);
        m.hset(tx.key('ws', ws, 'reloads'), d.reloadId, month);
        m.sadd(tx.key('inflight'), ws);
        break;
      }
      case 'AutoReloadSucceeded': {
        const d = event.data;
        settle(tx, ws, d.reloadId);
        m.hset(key, 'lastReloadAt', event.created, 'lastReloadId', d.reloadId);
        break;
      }
      case 'AutoReloadFailed': {
        const d = event.data;
        settle(tx, ws, d.reloadId);
        void FAIL.eval(
          m,
          { months: tx.key('ws', ws, 'months'), reloads: tx.key('ws', ws, 'reloads') },
          { reloadId: d.reloadId, amount: d.amountNanoUsd },
        );
        break;
      }
      case 'AutoReloadSuspended': {
        const d = event.data;
        m.hset(key, { suspendedReason: d.reason, suspendedAt: event.created, suspendedReloadId: d.reloadId });
        break;
      }
      case 'DepositRequested':
      case 'DepositFailed':
        break; // the revision and position above are all they change here
      default:
        assertNever(event);
    }
  },
});

/** Clears the in-flight marker if it is this reload's (an outcome of an older reload changes nothing). */
export const SETTLE = luaScript('billing/projections/billing-settings/settle.lua', {
  keys: ['settings', 'inflight'],
  args: ['reloadId', 'wsId'],
});

function settle(tx: ProjectionTx, ws: string, reloadId: string): void {
  void SETTLE.eval(tx.multi, { settings: tx.key('ws', ws), inflight: tx.key('inflight') }, { reloadId, wsId: ws });
}
