import { assertNever } from '../../../platform/event';
import type { ApiKeyBudgetChanged, ApiKeyBudgetChangedV2, ApiKeyCreated, MemberBudgetChanged } from '../../../accounts/events';
import type { BillingEvent } from '../../events';
import type { TokensDebited } from '../../../inference/events';
import { DEFAULT_BUDGET_PERIOD, periodIdsAt, type BudgetPeriod } from '../../../platform/budget-periods';
import { projection, type ProjectionTx } from '../../../platform/projections/projection';
import { luaScript } from '../../../platform/redis-scripts';
import { BATCH_RUNTIME } from '../../../platform/projections/batch-writes';
import { releaseCall, reservationKeys } from './reservation-keys';
import { RELEASE } from './reservation-scripts';

export const BALANCES = 'balances';

/**
 * Balance per workspace = deposits + reloads − debits, in nano-USD (HINCRBY is exact in int64;
 * a batch's increments are summed as bigint first: tx.hincrby).
 * Applying a TokensDebited also releases the request's reservation and adds the debit to its key's
 * spend and to its key creator's spend, in every period (day, week, month: the period ids of the
 * time the debit was recorded), in the same MULTI, so the money moves from "held" to "spent"
 * atomically and exactly once (the checkpoint commits with it). The reserve script reads all of it
 * (./reserve.inc.lua). Counting every period, whatever period a budget has, lets a budget change
 * its period and still see what was spent.
 *
 * Every key is the workspace's (its hash tag `{ws:<wsId>}`: one slot, so the reserve script reads
 * them all on one Redis Cluster node):
 *
 *   rm:balances:{gen}:{ws:<wsId>}                             hash: balance, deposited, reloaded, debited
 *   rm:balances:{gen}:{ws:<wsId>}:key-spend:{keyId}           hash: period id ("2026-11-25", "2026-W48", "2026-11") → nano-USD debited
 *   rm:balances:{gen}:{ws:<wsId>}:key-budget:{keyId}          string: budget, nano-USD (absent: none)
 *   rm:balances:{gen}:{ws:<wsId>}:key-budget-period:{keyId}   string: daily | weekly (absent: monthly)
 *   rm:balances:{gen}:{ws:<wsId>}:key-owner:{keyId}           string: the user who created the key
 *   rm:balances:{gen}:{ws:<wsId>}:member-spend:{userId}       hash: period id → nano-USD debited by the member's keys
 *   rm:balances:{gen}:{ws:<wsId>}:member-budget:{userId}      string: budget, nano-USD (absent: none)
 *   rm:balances:{gen}:{ws:<wsId>}:member-budget-period:{userId}  string: daily | weekly (absent: monthly)
 */
export const balancesProjection = projection<
  BillingEvent | TokensDebited | ApiKeyBudgetChanged | ApiKeyBudgetChangedV2 | MemberBudgetChanged | ApiKeyCreated
>()({
  name: BALANCES,
  handles: [
    'DepositSucceeded',
    'AutoReloadSucceeded',
    'TokensDebited',
    'ApiKeyBudgetChanged',
    'ApiKeyBudgetChangedV2',
    'MemberBudgetChanged',
    'ApiKeyCreated',
  ],
  apply(event, tx) {
    switch (event.type) {
      case 'ApiKeyCreated':
        tx.multi.set(tx.wsKey(event.data.workspaceId, 'key-owner', event.data.keyId), event.data.createdBy);
        return;
      case 'ApiKeyBudgetChanged': {
        const b = event.data.monthlyBudgetNanoUsd;
        return setBudget(
          tx,
          event.data.workspaceId,
          ['key-budget', event.data.keyId],
          b === null ? null : { nanoUsd: b, period: DEFAULT_BUDGET_PERIOD },
        );
      }
      case 'ApiKeyBudgetChangedV2':
      case 'MemberBudgetChanged': {
        const d = event.data;
        const budget = d.budgetNanoUsd === null ? null : { nanoUsd: d.budgetNanoUsd, period: d.period ?? DEFAULT_BUDGET_PERIOD };
        return setBudget(
          tx,
          d.workspaceId,
          event.type === 'MemberBudgetChanged' ? ['member-budget', event.data.userId] : ['key-budget', event.data.keyId],
          budget,
        );
      }
      case 'DepositSucceeded':
      case 'AutoReloadSucceeded': {
        const d = event.data;
        const key = tx.wsKey(d.workspaceId);
        tx.hincrby(key, 'balance', d.amountNanoUsd);
        tx.hincrby(key, event.type === 'DepositSucceeded' ? 'deposited' : 'reloaded', d.amountNanoUsd);
        return;
      }
      case 'TokensDebited': {
        const debit = event.data;
        const amount = BigInt(debit.amountNanoUsd);
        const key = tx.wsKey(debit.workspaceId);
        tx.hincrby(key, 'balance', -amount);
        tx.hincrby(key, 'debited', amount);
        const periods = periodIdsAt(new Date(event.created));
        const keySpend = tx.wsKey(debit.workspaceId, 'key-spend', debit.keyId);
        for (const id of [periods.daily, periods.weekly, periods.monthly]) tx.hincrby(keySpend, id, amount);
        // The creator is in this generation (ApiKeyCreated above); the script adds to their spend.
        const spend = {
          keyOwner: tx.wsKey(debit.workspaceId, 'key-owner', debit.keyId),
          memberSpendPrefix: tx.wsKey(debit.workspaceId, 'member-spend', ''),
          amount: debit.amountNanoUsd,
        };
        MEMBER_SPEND.each(tx, {}, { ...spend, ...periods });
        const k = reservationKeys(tx.sharedKey, debit.workspaceId);
        // The script Reservations.release runs, here once per debit inside the batch's one EVAL.
        const release = releaseCall(k, debit.workspaceId, debit.requestId);
        RELEASE.each(tx, release.keys, release.args);
        return;
      }
      default:
        assertNever(event);
    }
  },
});

/** keyOwner: the key-owner key; memberSpendPrefix: + userId; the debit's amount and its period ids. */
export const MEMBER_SPEND = luaScript(
  'billing/projections/balances/member-spend.lua',
  { keys: [], args: ['keyOwner', 'memberSpendPrefix', 'amount', 'daily', 'weekly', 'monthly'] },
  [BATCH_RUNTIME],
);

/** A budget's amount and, beside it, its period (absent for monthly, as budgets without one read). */
function setBudget(
  tx: ProjectionTx,
  workspaceId: string,
  [name, id]: [string, string],
  budget: { nanoUsd: string; period: BudgetPeriod } | null,
): void {
  const amount = tx.wsKey(workspaceId, name, id);
  const period = tx.wsKey(workspaceId, `${name}-period`, id);
  if (budget === null) {
    tx.multi.del(amount, period);
    return;
  }
  tx.multi.set(amount, budget.nanoUsd);
  if (budget.period === DEFAULT_BUDGET_PERIOD) tx.multi.del(period);
  else tx.multi.set(period, budget.period);
}
