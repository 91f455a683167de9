import type { BillingEvent } from '../../billing/events';
import { fold, type BillingState, type PaymentGateway } from '../../billing';
import { readEvents } from '../../platform/eventstore/command-handler';
import { streamPrefix } from '../../platform/streams';
import { formatUsd } from '../../platform/money';
import type { EventStore } from '../../platform/eventstore/port';
import type { Services } from '../../services';
import { allEvents } from './all-events';
import { out } from './out';

export type ReconcileKind =
  /** The ledger credits a payment the gateway does not show as succeeded. */
  | 'missing_at_gateway'
  /** Amounts differ between the ledger and the gateway. */
  | 'amount_mismatch'
  /** The gateway took money the ledger has not credited (its deposit or reload is pending, failed or unknown). */
  | 'not_in_ledger'
  /** More than one successful payment for one deposit or reload. */
  | 'duplicate_charge';

export interface ReconcileDifference {
  kind: ReconcileKind;
  workspaceId: string;
  ledgerId: string;
  paymentIntentId: string | null;
  ledgerAmount: string | null;
  gatewayAmount: string | null;
  note: string;
}

export interface ReconcileReport {
  gateway: string;
  ledgerCredits: number;
  ledgerTotalNanoUsd: string;
  gatewayCharges: number;
  gatewayTotalNanoUsd: string;
  matched: number;
  /** Deposits requested and reloads triggered that have no outcome yet. */
  pending: number;
  differences: ReconcileDifference[];
}

interface Credit {
  kind: 'deposit' | 'reload';
  workspaceId: string;
  ledgerId: string;
  paymentIntentId: string;
  amount: bigint;
}

/** The ledger's deposits and reloads against the payment gateway's successful charges. */
export async function reconcile(store: EventStore, gateway: PaymentGateway): Promise<ReconcileReport> {
  const credits = new Map<string, Credit>(); // by PaymentIntent id
  const streamsSeen = new Set<string>();
  for await (const e of allEvents(store, { progress: 'reconcile' })) {
    if (!e.stream.startsWith(streamPrefix.billing)) continue;
    streamsSeen.add(e.stream);
    const d = e.data as { workspaceId: string; depositId?: string; reloadId?: string; paymentIntentId?: string; amountNanoUsd?: string };
    if (e.type === 'DepositSucceeded' || e.type === 'AutoReloadSucceeded') {
      const kind = e.type === 'DepositSucceeded' ? 'deposit' : 'reload';
      credits.set(d.paymentIntentId!, {
        kind,
        workspaceId: d.workspaceId,
        ledgerId: (kind === 'deposit' ? d.depositId : d.reloadId)!,
        paymentIntentId: d.paymentIntentId!,
        amount: BigInt(d.amountNanoUsd!),
      });
    }
  }
  let pending = 0;
  const states = new Map<string, BillingState>();
  for (const stream of streamsSeen) {
    const st = fold(await readEvents<BillingEvent>(store, stream));
    states.set(stream.slice(streamPrefix.billing.length), st);
    pending += [...st.deposits.values()].filter((x) => x.status === 'requested').length + (st.inFlight ? 1 : 0);
  }

  const differences: ReconcileDifference[] = [];
  const byLedgerId = new Map<string, string[]>();
  let gatewayCharges = 0;
  let gatewayTotal = 0n;
  let matched = 0;
  const seen = new Set<string>();
  for await (const p of gateway.listPayments()) {
    if (p.status !== 'succeeded' || !p.metadata.tollgate_kind) continue;
    gatewayCharges++;
    gatewayTotal += p.amountNanoUsd;
    seen.add(p.paymentIntentId);
    const ledgerId = p.metadata.ledger_id ?? '';
    byLedgerId.set(ledgerId, [...(byLedgerId.get(ledgerId) ?? []), p.paymentIntentId]);
    const c = credits.get(p.paymentIntentId);
    if (!c) {
      const st = states.get(p.metadata.workspace_id ?? '');
      const entry = p.metadata.tollgate_kind === 'deposit' ? st?.deposits.get(ledgerId) : st?.reloads.get(ledgerId);
      const state = entry
        ? entry.status === 'requested' || entry.status === 'in_flight'
          ? 'still pending'
          : entry.status
        : 'unknown to the ledger';
      differences.push({
        kind: 'not_in_ledger',
        workspaceId: p.metadata.workspace_id ?? '',
        ledgerId,
        paymentIntentId: p.paymentIntentId,
        ledgerAmount: entry ? entry.amount.toString() : null,
        gatewayAmount: p.amountNanoUsd.toString(),
        note: `the ${p.metadata.tollgate_kind} is ${state}`,
      });
      continue;
    }
    if (c.amount !== p.amountNanoUsd) {
      differences.push({
        kind: 'amount_mismatch',
        workspaceId: c.workspaceId,
        ledgerId: c.ledgerId,
        paymentIntentId: p.paymentIntentId,
        ledgerAmount: c.amount.toString(),
        gatewayAmount: p.amountNanoUsd.toString(),
        note: 'amounts differ',
      });
      continue;
    }
    matched++;
  }
  for (const c of credits.values()) {
    if (seen.has(c.paymentIntentId)) continue;
    differences.push({
      kind: 'missing_at_gateway',
      workspaceId: c.workspaceId,
      ledgerId: c.ledgerId,
      paymentIntentId: c.paymentIntentId,
      ledgerAmount: c.amount.toString(),
      gatewayAmount: null,
      note: 'credited in the ledger, but the gateway has no successful payment with this id',
    });
  }
  for (const [ledgerId, pis] of byLedgerId) {
    if (pis.length > 1) {
      differences.push({
        kind: 'duplicate_charge',
        workspaceId: '',
        ledgerId,
        paymentIntentId: pis.join(' '),
        ledgerAmount: null,
        gatewayAmount: null,
        note: `${pis.length} successful payments for one ledger entry`,
      });
    }
  }
  const ledgerTotal = [...credits.values()].reduce((s, c) => s + c.amount, 0n);
  return {
    gateway: gateway.kind,
    ledgerCredits: credits.size,
    ledgerTotalNanoUsd: ledgerTotal.toString(),
    gatewayCharges,
    gatewayTotalNanoUsd: gatewayTotal.toString(),
    matched,
    pending,
    differences,
  };
}

/** Prints the reconciliation; exit code 1 on any difference. */
export async function printReconcile(s: Services, o: { json?: boolean }): Promise<void> {
  const r = await reconcile(s.store, s.gateway);
  if (o.json) out(JSON.stringify(r, null, 2));
  else {
    out(
      `reconciled against ${r.gateway}: ledger ${r.ledgerCredits} credits (${formatUsd(BigInt(r.ledgerTotalNanoUsd))} USD), gateway ${r.gatewayCharges} charges (${formatUsd(BigInt(r.gatewayTotalNanoUsd))} USD), ${r.matched} matched, ${r.pending} pending, ${r.differences.length} differences`,
    );
    for (const d of r.differences) {
      out(`  ${d.kind}: workspace ${d.workspaceId || '?'} entry ${d.ledgerId} payment ${d.paymentIntentId ?? '-'} — ${d.note}`);
    }
  }
  if (r.differences.length) process.exitCode = 1;
}
