import type { BillingCommand, ChargeOutcome } from '../commands';
import type { EventMetadata } from '../../platform/eventstore/port';
import type { PaymentRecord } from '../payments/port';
import type { Services } from '../../services';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import { decideBilling } from './decide-billing';

export type SettleVerdict = 'settled' | 'already_settled' | 'not_final' | 'unknown_entry' | 'ignored' | 'mismatch';

/**
 * Settles a deposit or reload from the gateway's current view of its PaymentIntent (a webhook, or
 * reconcile). Returns what was done. The PaymentIntent's own metadata says which ledger entry it is.
 */
export async function settleFromPayment(
  s: Pick<Services, 'store' | 'now' | 'newId' | 'progress' | 'config' | 'log'>,
  pi: PaymentRecord,
  metadata: EventMetadata,
): Promise<SettleVerdict> {
  const kind = pi.metadata.tollgate_kind;
  const workspaceId = pi.metadata.workspace_id;
  const ledgerId = pi.metadata.ledger_id;
  if ((kind !== 'deposit' && kind !== 'reload') || !workspaceId || !ledgerId) return 'ignored';
  if (pi.status === 'pending') return 'not_final';
  const outcome: ChargeOutcome =
    pi.status === 'succeeded'
      ? { status: 'succeeded', paymentIntentId: pi.paymentIntentId }
      : {
          status: 'failed',
          paymentIntentId: pi.paymentIntentId,
          code: pi.status === 'canceled' ? 'canceled' : (pi.failureCode ?? 'card_declined'),
          reason: pi.failureMessage ?? `The payment ${pi.status === 'canceled' ? 'was canceled' : 'failed'}`,
        };
  let refusal = null as 'unknown_entry' | 'mismatch' | null;
  const done = await decideBilling(
    s,
    workspaceId,
    (st): BillingCommand | null => {
      refusal = null;
      const rec = kind === 'deposit' ? st.deposits.get(ledgerId) : st.reloads.get(ledgerId);
      if (!rec) refusal = 'unknown_entry';
      else if (pi.status === 'succeeded' && rec.amount !== pi.amountNanoUsd) refusal = 'mismatch';
      if (refusal) return null;
      return kind === 'deposit'
        ? { type: 'RecordDepositOutcome', data: { workspaceId, depositId: ledgerId, outcome } }
        : { type: 'RecordReloadOutcome', data: { workspaceId, reloadId: ledgerId, outcome } };
    },
    metadata,
  );
  const verdict: SettleVerdict = refusal ?? (done.events.length ? 'settled' : 'already_settled');
  if (verdict === 'mismatch') s.log.error({ pi: pi.paymentIntentId, ledgerId }, 'a payment does not match the amount of its ledger entry');
  await readYourWrites(s, done.appended);
  return verdict;
}
