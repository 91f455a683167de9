import type { BillingEvent, DepositSucceeded, PaymentMethodAttached } from '../events';
import { LEDGER, type LedgerEntry } from '../projections/ledger/projection';
import { StatementBuilder, statementMonthProblem, type MonthlyStatement } from '../statement';
import { DomainError, notFound } from '../../platform/errors';
import { readEvents } from '../../platform/eventstore/command-handler';
import type { NanoUsd } from '../../platform/money';
import { streams } from '../../platform/streams';
import type { Services } from '../../services';

/** How many ledger entries one read takes while a statement folds them. */
const PAGE = 5000;

/**
 * The workspace's statement for a UTC month, folded from every entry of its ledger read model (the
 * same money lines `tollgate ledger statement --month` replays from the event store, through the
 * same StatementBuilder). A month in the future or before the workspace existed is refused.
 */
export async function monthlyStatementOf(
  s: Pick<Services, 'readModels' | 'now'>,
  w: { workspaceId: string; created: string },
  month: string,
): Promise<MonthlyStatement> {
  const problem = statementMonthProblem(month, s.now(), w.created);
  if (problem) throw new DomainError('unprocessable', problem);
  const b = new StatementBuilder(w.workspaceId, month);
  const k = await s.readModels.keys(LEDGER);
  const list = k('ws', w.workspaceId, 'entries');
  for (let from = 0; ; from += PAGE) {
    const raw = await s.readModels.redis.lrange(list, from, from + PAGE - 1);
    for (const r of raw) {
      const e = JSON.parse(r) as LedgerEntry;
      b.add({ ...e, amount: BigInt(e.amountNanoUsd) });
    }
    if (raw.length < PAGE) break;
  }
  return b.result();
}

export interface DepositReceipt {
  workspaceId: string;
  depositId: string;
  amount: NanoUsd;
  /** When the charge succeeded (the DepositSucceeded event's time). */
  paidAt: string;
  requestedAt: string;
  /** The payment provider's reference (Stripe PaymentIntent id). */
  paymentReference: string;
  gateway: string;
  card: { brand: string; last4: string } | null;
  /** userId of the admin who made it. */
  by: string;
}

/** The receipt of a succeeded deposit, from billing-{ws} itself (the source of truth); 404 for any other. */
export async function depositReceipt(s: Pick<Services, 'store'>, workspaceId: string, depositId: string): Promise<DepositReceipt> {
  const events = await readEvents<BillingEvent>(s.store, streams.billing(workspaceId));
  const cards = new Map<string, PaymentMethodAttached['data']>();
  let requested: { at: string; paymentMethodId: string; gateway: string } | null = null;
  let paid: { at: string; data: DepositSucceeded['data'] } | null = null;
  for (const e of events) {
    if (e.type === 'PaymentMethodAttached') cards.set(e.data.paymentMethodId, e.data);
    else if (e.type === 'DepositRequested' && e.data.depositId === depositId)
      requested = { at: e.created, paymentMethodId: e.data.paymentMethodId, gateway: e.data.gateway };
    else if (e.type === 'DepositSucceeded' && e.data.depositId === depositId) paid = { at: e.created, data: e.data };
  }
  if (!paid) throw notFound('No succeeded deposit with this id in this workspace (a failed or pending deposit has no receipt)');
  const card = requested ? cards.get(requested.paymentMethodId) : undefined;
  return {
    workspaceId,
    depositId,
    amount: BigInt(paid.data.amountNanoUsd),
    paidAt: paid.at,
    requestedAt: requested?.at ?? paid.at,
    paymentReference: paid.data.paymentIntentId,
    gateway: requested?.gateway ?? card?.gateway ?? 'unknown',
    card: card ? { brand: card.brand, last4: card.last4 } : null,
    by: paid.data.by,
  };
}
