import type { BillingEvent } from '../../billing/events';
import type { TokensDebited } from '../../inference/events';
import { assertNever } from '../../platform/event';
import { projection } from '../../platform/projections/projection';
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
// Exact comparison of integer strings (no leading zeros): Lua numbers are doubles, nano-USD are not.
const CROSS = `
if ARGV[1] == 'threshold' then
  if ARGV[2] == '' then redis.call('HDEL', KEYS[1], 'threshold') else redis.call('HSET', KEYS[1], 'threshold', ARGV[2]) end
  return
end
-- Balance and threshold in one read; without a threshold (most workspaces) nothing else is read.
local read = redis.call('HMGET', KEYS[1], 'balance', 'threshold')
redis.call('HINCRBY', KEYS[1], 'balance', ARGV[2])
local t = read[2]
if not t then return end
local function cmp(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na and -1 or 1 end
  local x, y = na and a:sub(2) or a, nb and b:sub(2) or b
  local r = 0
  if #x ~= #y then r = (#x < #y) and -1 or 1 elseif x ~= y then r = (x < y) and -1 or 1 end
  return na and -r or r
end
local before = read[1] or '0'
local after = redis.call('HGET', KEYS[1], 'balance')
if cmp(before, t) >= 0 and cmp(after, t) < 0 then
  redis.call('HSET', KEYS[2], ARGV[3], t .. ':' .. after)
end`;

export const balanceAlertsProjection = projection<BillingEvent | TokensDebited | BalanceAlertThresholdSet>()({
  name: BALANCE_ALERTS,
  handles: ['DepositSucceeded', 'AutoReloadSucceeded', 'TokensDebited', 'BalanceAlertThresholdSet'],
  apply(event, tx) {
    const ws = event.data.workspaceId;
    const keys = [tx.key('ws', ws), tx.key('crossings', ws)];
    switch (event.type) {
      case 'BalanceAlertThresholdSet':
        tx.evalEach(CROSS, keys, ['threshold', event.data.thresholdNanoUsd === null ? '' : BigInt(event.data.thresholdNanoUsd).toString(), event.id]);
        break;
      case 'DepositSucceeded':
      case 'AutoReloadSucceeded':
        tx.evalEach(CROSS, keys, ['delta', BigInt(event.data.amountNanoUsd).toString(), event.id]);
        break;
      case 'TokensDebited':
        tx.evalEach(CROSS, keys, ['delta', (-BigInt(event.data.amountNanoUsd)).toString(), event.id]);
        break;
      default:
        assertNever(event);
    }
  },
});
