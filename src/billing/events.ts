import type { Event } from '../platform/event';

/**
 * Events of the `billing-{workspaceId}` stream. Amounts are nano-USD integer strings. These shapes
 * are what finance replays: never edit one in place, add a V2.
 */
export type PaymentMethodAttached = Event<
  'PaymentMethodAttached',
  {
    workspaceId: string;
    paymentMethodId: string;
    brand: string;
    last4: string;
    /** The gateway's customer id (Stripe cus_…), or null in the sandbox. */
    customerId: string | null;
    gateway: 'stripe' | 'sandbox';
  }
>;
export type DepositSucceeded = Event<
  'DepositSucceeded',
  { workspaceId: string; depositId: string; amountNanoUsd: string; paymentIntentId: string; by: string }
>;
export type DepositFailed = Event<
  'DepositFailed',
  {
    workspaceId: string;
    depositId: string;
    amountNanoUsd: string;
    paymentIntentId: string | null;
    reason: string;
    code: string;
    by: string;
  }
>;
export type AutoReloadConfigured = Event<
  'AutoReloadConfigured',
  {
    workspaceId: string;
    enabled: boolean;
    thresholdNanoUsd: string;
    amountNanoUsd: string;
    /** Most that auto-reload may charge in one calendar month (UTC), or null for no cap. */
    monthlyCapNanoUsd: string | null;
    by: string;
  }
>;
export type AutoReloadTriggered = Event<
  'AutoReloadTriggered',
  { workspaceId: string; reloadId: string; amountNanoUsd: string; balanceNanoUsd: string }
>;
export type AutoReloadSucceeded = Event<
  'AutoReloadSucceeded',
  { workspaceId: string; reloadId: string; amountNanoUsd: string; paymentIntentId: string }
>;
export type AutoReloadFailed = Event<
  'AutoReloadFailed',
  { workspaceId: string; reloadId: string; amountNanoUsd: string; paymentIntentId: string | null; reason: string; code: string }
>;
export type AutoReloadSuspended = Event<'AutoReloadSuspended', { workspaceId: string; reloadId: string; reason: string }>;

/**
 * Added with the deposit flow: written before the card is charged, so a charge whose answer was
 * lost (a timeout, a crash) is still known to the ledger and can be settled by the Stripe webhook
 * or by the client's retry with the same Idempotency-Key. It moves no money.
 */
export type DepositRequested = Event<
  'DepositRequested',
  {
    workspaceId: string;
    depositId: string;
    amountNanoUsd: string;
    /** The payment method and customer charged: a retry must send exactly the same parameters. */
    paymentMethodId: string;
    customerId: string | null;
    gateway: 'stripe' | 'sandbox';
    by: string;
  }
>;

/**
 * Added with credit grants (docs/BILLING.md, "Credit grants"). An operator granted the workspace
 * credit of its own kind: it adds to the balance and is drawn down by debits in the grant order
 * (./grants.ts). Deposits and reloads keep their own events; they are read as paid grants that never
 * expire. `grantId` is derived from the operator's Idempotency-Key.
 */
export type CreditGranted = Event<
  'CreditGranted',
  {
    workspaceId: string;
    grantId: string;
    category: 'promotional';
    amountNanoUsd: string;
    /** Lower is drawn first (1–100; paid credit is 50). */
    priority: number;
    /** ISO UTC; null: never expires. */
    expiresAt: string | null;
    note: string;
    /** Who granted it: 'operator' for the admin API. */
    by: string;
  }
>;

/**
 * A grant's expiry was recorded: whatever the grant has left at this point of the log leaves the
 * balance (the amount is the fold's, not written here, so a replay cannot disagree with it).
 * Appended by the expiry worker once the service clock passed `expiresAt` and no hold admitted
 * before then is still open (workers/credit-expiry).
 */
export type CreditExpired = Event<'CreditExpired', { workspaceId: string; grantId: string; expiresAt: string }>;

/**
 * Added with credit notes (docs/BILLING.md, "Credit notes"). An operator credited the workspace part
 * or all of one request's cost: a grant of category `credit_note` (`creditNoteId` is its grant id,
 * derived from the operator's Idempotency-Key) that never expires and is drawn down like any other
 * grant, at priority 40 (before paid credit, which stays refundable). The amount is at most the
 * request's cost less the credit notes before it (the decider checks it on this stream's revision).
 */
export type CreditNoteIssued = Event<
  'CreditNoteIssued',
  {
    workspaceId: string;
    creditNoteId: string;
    /** The request credited (its inference-{requestId} stream holds the debit). */
    requestId: string;
    amountNanoUsd: string;
    reason: string;
    by: string;
  }
>;

/** Every event of billing-{workspaceId}: what its evolve folds and its decide emits. */
export type BillingEvent =
  | PaymentMethodAttached
  | DepositRequested
  | DepositSucceeded
  | DepositFailed
  | AutoReloadConfigured
  | AutoReloadTriggered
  | AutoReloadSucceeded
  | AutoReloadFailed
  | AutoReloadSuspended
  | CreditGranted
  | CreditExpired
  | CreditNoteIssued;

/**
 * A key's spend in one budget period reached 80% (or 100%) of its budget. One per key, period and
 * threshold: written by the key-budget alert reactor (workers/budget-alerts) to its own stream
 * `key-budget-{keyId}-{periodId}-{percent}` with `no_stream` and an id derived from the three, so a
 * retry or a second projector never writes it twice (and a rebuild, which runs no reactor, never
 * writes it at all). Webhooks `key.budget_80_percent` and `key.budget_100_percent` are sent from it.
 * Not part of the billing-{ws} stream's fold.
 */
export interface KeyBudgetThresholdData extends Record<string, unknown> {
  workspaceId: string;
  keyId: string;
  thresholdPercent: 80 | 100;
  /** The budget, and what the key had spent in the period when the crossing was seen (nano-USD). */
  budgetNanoUsd: string;
  spentNanoUsd: string;
  period: 'daily' | 'weekly' | 'monthly';
  /** "2026-11-25", "2026-W48" or "2026-11". */
  periodId: string;
  /** ISO UTC: the period's first instant, and when it resets. */
  periodStart: string;
  resetsAt: string;
  /** The debit whose projection showed the crossing. */
  requestId: string;
}
export type KeyBudget80PercentReached = Event<'KeyBudget80PercentReached', KeyBudgetThresholdData>;
export type KeyBudget100PercentReached = Event<'KeyBudget100PercentReached', KeyBudgetThresholdData>;
export type KeyBudgetThresholdEvent = KeyBudget80PercentReached | KeyBudget100PercentReached;
