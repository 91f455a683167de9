import type { BillingEvent } from '../../billing/events';
import type { TokensDebited } from '../../inference/events';
import { assertNever } from '../../platform/event';
import { projection } from '../../platform/projections/projection';
import { luaScript } from '../../platform/redis-scripts';
import type { BalanceAlertThresholdSet } from '../events';

export const BALANCE_ALERTS = 'balance-alerts';

/**
 * Where a workspace's balance crossed below its alert threshold, folded from the ordered log, so a
 * rebuild finds the same crossings (a function of the events alone, unlike the live balance a
 * reactor would read later). Per workspace:
 *   rm:balance-alerts:{gen}:ws:{wsId}         hash: balance (nano-USD, the balances projection's sum), threshold
 *   rm:balance-alerts:{gen}:crossings:{wsId}  hash: id of the debit that crossed → "threshold:balanceAfter"
 * A debit crosses when the balance before it was at or above the threshold and after it is below:
 * one crossing per dip, however many debits follow below it; a deposit back to the threshold or
 * above re-arms it. Setting a threshold notifies nothing by itself.
 */
/** Per event, once per call in the batch (tx.evalEach). */
export const CROSS = luaScript('webhooks/balance-alerts/cross.lua', { keys: ['state', 'crossings'], args: ['kind', 'value', 'eventId'] });

export const balanceAlertsProjection = projection<BillingEvent | TokensDebited | BalanceAlertThresholdSet>()({
  name: BALANCE_ALERTS,
  handles: ['DepositSucceeded', 'AutoReloadSucceeded', 'TokensDebited', 'BalanceAlertThresholdSet'],
  apply(event, tx) {
    const ws = event.data.workspaceId;
    const keys = { state: tx.key('ws', ws), crossings: tx.key('crossings', ws) };
    switch (event.type) {
      case 'BalanceAlertThresholdSet':
        CROSS.each(tx, keys, {
          kind: 'threshold',
          value: event.data.thresholdNanoUsd === null ? '' : BigInt(event.data.thresholdNanoUsd).toString(),
          eventId: event.id,
        });
        break;
      case 'DepositSucceeded':
      case 'AutoReloadSucceeded':
        CROSS.each(tx, keys, { kind: 'delta', value: BigInt(event.data.amountNanoUsd).toString(), eventId: event.id });
        break;
      case 'TokensDebited':
        CROSS.each(tx, keys, { kind: 'delta', value: (-BigInt(event.data.amountNanoUsd)).toString(), eventId: event.id });
        break;
      default:
        assertNever(event);
    }
  },
});
