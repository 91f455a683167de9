import { assertNever } from '../../../platform/event';
import type { ApiKeyBudgetChanged } from '../../../accounts/events';
import type { BillingEvent } from '../../events';
import { monthOf } from '../../state';
import type { TokensDebited } from '../../../inference/events';
import { projection } from '../../../platform/projections/projection';
import { RELEASE, releaseArgs, reservationKeys } from './reservations';

export const BALANCES = 'balances';

/**
 * Balance per workspace = deposits + reloads − debits, in nano-USD (HINCRBY is exact in int64).
 * Applying a TokensDebited also releases the request's reservation and adds the debit to its key's
 * spend for the UTC month, in the same MULTI, so the money moves from "held" to "spent" atomically
 * (the reserve script reads all three: ./reservations.ts).
 *
 *   rm:balances:{gen}:ws:{wsId}            hash: balance, deposited, reloaded, debited
 *   rm:balances:{gen}:key-spend:{keyId}    hash: UTC month "YYYY-MM" → nano-USD debited
 *   rm:balances:{gen}:key-budget:{keyId}   string: monthly budget, nano-USD (absent: none)
 */
export const balancesProjection = projection<BillingEvent | TokensDebited | ApiKeyBudgetChanged>()({
  name: BALANCES,
  handles: ['DepositSucceeded', 'AutoReloadSucceeded', 'TokensDebited', 'ApiKeyBudgetChanged'],
  apply(event, tx) {
    if (event.type === 'ApiKeyBudgetChanged') {
      const b = event.data;
      if (b.monthlyBudgetNanoUsd === null) tx.multi.del(tx.key('key-budget', b.keyId));
      else tx.multi.set(tx.key('key-budget', b.keyId), b.monthlyBudgetNanoUsd);
      return;
    }
    const d = event.data;
    const key = tx.key('ws', d.workspaceId);
    switch (event.type) {
      case 'DepositSucceeded':
        tx.multi.hincrby(key, 'balance', d.amountNanoUsd).hincrby(key, 'deposited', d.amountNanoUsd);
        break;
      case 'AutoReloadSucceeded':
        tx.multi.hincrby(key, 'balance', d.amountNanoUsd).hincrby(key, 'reloaded', d.amountNanoUsd);
        break;
      case 'TokensDebited': {
        const debit = event.data;
        // (-x).toString(), not `-${x}`: Redis refuses "-0" as an integer (a debit of nothing is possible).
        tx.multi.hincrby(key, 'balance', (-BigInt(debit.amountNanoUsd)).toString()).hincrby(key, 'debited', debit.amountNanoUsd);
        tx.multi.hincrby(tx.key('key-spend', debit.keyId), monthOf(event.created) /* the UTC month, as accounts' budgetMonth reads it */, debit.amountNanoUsd);
        const k = reservationKeys(tx.sharedKey, debit.workspaceId);
        // The same script Reservations.release runs by SHA, sent here as EVAL: inside MULTI a NOSCRIPT
        // (script cache flushed) would fail this one command while the debit and checkpoint commit.
        tx.multi.eval(RELEASE, 3, ...releaseArgs(k, debit.workspaceId, debit.requestId));
        break;
      }
      default:
        assertNever(event);
    }
  },
});
