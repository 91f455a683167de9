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
import { drawOrderKey, expiryMember, grantMeta, grantOf } from '../../grants';
import { grantBookLua } from '../grants/grant-book';
import { wsTag } from '../../../platform/projections/keyspace';

export const BALANCES = 'balances';

/**
 * Balance per workspace = deposits + reloads + grants − debits − expiries, in nano-USD (HINCRBY is exact in int64;
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
 *   rm:balances:{gen}:{ws:<wsId>}                             hash: balance, deposited, reloaded, granted, expired, debited,
 *                                                             and the grant book: 'g:<grantId>' → left, 'expiring' (../grants)
 *   rm:balances:{gen}:{ws:<wsId>}:grant-order                 sorted set: the draw order of the grants with something left
 *   rm:balances:{gen}:{ws:<wsId>}:grants                      hash: grantId → JSON (what was granted), '<grantId>:expired' → amount
 *   {prefix}credit-expiry:{ws:<wsId>} (shared)                sorted set 'wsId grantId' by expiresAt (ms): the expiry worker's to-do
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
    'CreditGranted',
    'CreditNoteIssued',
    'CreditExpired',
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
      case 'AutoReloadSucceeded':
      case 'CreditGranted':
      case 'CreditNoteIssued': {
        const d = event.data;
        const key = tx.wsKey(d.workspaceId);
        tx.hincrby(key, 'balance', d.amountNanoUsd);
        tx.hincrby(key, FIELD_OF[event.type], d.amountNanoUsd);
        const grant = grantOf(event);
        tx.multi.hset(tx.wsKey(d.workspaceId, 'grants'), grant.grantId, JSON.stringify(grantMeta(grant, event)));
        if (grant.expiresAt !== null) {
          tx.multi.zadd(
            creditExpiryKey(tx.sharedKey, d.workspaceId),
            Date.parse(grant.expiresAt),
            expiryMember(d.workspaceId, grant.grantId),
          );
        }
        return bookCall(tx, d.workspaceId, 'add', drawOrderKey(grant), d.amountNanoUsd, event.created);
      }
      case 'CreditExpired': {
        const d = event.data;
        tx.multi.zrem(creditExpiryKey(tx.sharedKey, d.workspaceId), expiryMember(d.workspaceId, d.grantId));
        return bookCall(tx, d.workspaceId, 'expire', d.grantId, '0', event.created);
      }
      case 'TokensDebited': {
        const debit = event.data;
        const amount = BigInt(debit.amountNanoUsd);
        const key = tx.wsKey(debit.workspaceId);
        tx.hincrby(key, 'balance', -amount);
        tx.hincrby(key, 'debited', amount);
        bookCall(tx, debit.workspaceId, 'draw', '', debit.amountNanoUsd, event.created);
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

/** A credit note adds to `granted` like promotional credit: `ledger verify` compares the same totals. */
const FIELD_OF = {
  DepositSucceeded: 'deposited',
  AutoReloadSucceeded: 'reloaded',
  CreditGranted: 'granted',
  CreditNoteIssued: 'granted',
} as const;

/**
 * The grant book (../grants/grant-book.inc.lua) lives in the workspace's hash beside its balance, so
 * the admission script reads the balance and the grants' expiries from one key it already reads.
 */
export const BALANCES_GRANTS = luaScript(
  'billing/projections/grants/balances-grants.lua',
  { keys: [], args: ['op', 'book', 'order', 'meta', 'key', 'amount', 'atMs'] },
  [grantBookLua],
);

/** The expiry worker's to-do for one workspace: 'wsId grantId' by expiresAt (ms), in the workspace's slot. */
export const creditExpiryKey = (shared: (...parts: string[]) => string, workspaceId: string) => shared('credit-expiry', wsTag(workspaceId));

function bookCall(tx: ProjectionTx, ws: string, op: 'add' | 'draw' | 'expire', key: string, amount: string, at: string): void {
  BALANCES_GRANTS.each(
    tx,
    {},
    {
      op,
      book: tx.wsKey(ws),
      order: tx.wsKey(ws, 'grant-order'),
      meta: tx.wsKey(ws, 'grants'),
      key,
      amount,
      atMs: String(Date.parse(at)).padStart(13, '0'),
    },
  );
}

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
