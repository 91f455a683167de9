import type { NanoUsd } from '../platform/money';

/**
 * The state of billing-{workspaceId}, folded from its events (./evolve.ts): what is on file (card,
 * auto-reload settings), which deposits and reloads exist and how they ended.
 */

export type Gateway = 'stripe' | 'sandbox';

export interface PaymentMethodOnFile {
  id: string;
  brand: string;
  last4: string;
  customerId: string | null;
  gateway: Gateway;
}

export interface DepositRecord {
  depositId: string;
  amount: NanoUsd;
  status: 'requested' | 'succeeded' | 'failed';
  paymentMethodId: string;
  customerId: string | null;
  gateway: Gateway;
  by: string;
  requestedAt: string;
  paymentIntentId: string | null;
  code: string | null;
  reason: string | null;
}

export interface ReloadRecord {
  reloadId: string;
  amount: NanoUsd;
  status: 'in_flight' | 'succeeded' | 'failed';
  /** UTC month of the trigger, "YYYY-MM" (the monthly cap counts by it). */
  month: string;
  triggeredAt: string;
  balanceAtTrigger: NanoUsd;
  /** The card on file when the reload was triggered: a retried charge must use the same one. */
  paymentMethodId: string | null;
  customerId: string | null;
  paymentIntentId: string | null;
  code: string | null;
  reason: string | null;
}

export interface AutoReloadSettings {
  enabled: boolean;
  threshold: NanoUsd;
  amount: NanoUsd;
  monthlyCap: NanoUsd | null;
}

export interface Suspension {
  reloadId: string;
  reason: string;
  at: string;
}

/** A grant an operator made (CreditGranted); deposits and reloads are the paid grants. */
export interface CreditGrantRecord {
  grantId: string;
  category: 'promotional';
  amount: NanoUsd;
  priority: number;
  expiresAt: string | null;
  note: string;
  by: string;
  grantedAt: string;
  /** When its expiry was recorded (CreditExpired), else null. */
  expiredAt: string | null;
}

/** A credit note an operator issued against a request (CreditNoteIssued). */
export interface CreditNoteRecord {
  creditNoteId: string;
  requestId: string;
  amount: NanoUsd;
  reason: string;
  by: string;
  issuedAt: string;
}

export interface BillingState {
  readonly workspaceId: string | null;
  readonly customerId: string | null;
  readonly paymentMethod: PaymentMethodOnFile | null;
  readonly deposits: ReadonlyMap<string, DepositRecord>;
  /** Sum of succeeded deposits. */
  readonly deposited: NanoUsd;
  /** Sum of succeeded reloads. */
  readonly reloaded: NanoUsd;
  readonly autoReload: AutoReloadSettings | null;
  readonly suspended: Suspension | null;
  /** The reload triggered and not yet settled (at most one). */
  readonly inFlight: string | null;
  readonly reloads: ReadonlyMap<string, ReloadRecord>;
  /** Per UTC month: amounts of reloads triggered and not failed (in flight or succeeded). */
  readonly reloadedByMonth: ReadonlyMap<string, NanoUsd>;
  /** Operator grants by grantId. */
  readonly grants: ReadonlyMap<string, CreditGrantRecord>;
  /** Credit notes by creditNoteId, in the order issued. */
  readonly creditNotes: ReadonlyMap<string, CreditNoteRecord>;
}

export function initialBillingState(): BillingState {
  return {
    workspaceId: null,
    customerId: null,
    paymentMethod: null,
    deposits: new Map(),
    deposited: 0n,
    reloaded: 0n,
    autoReload: null,
    suspended: null,
    inFlight: null,
    reloads: new Map(),
    reloadedByMonth: new Map(),
    grants: new Map(),
    creditNotes: new Map(),
  };
}

export const monthOf = (iso: string): string => iso.slice(0, 7);
