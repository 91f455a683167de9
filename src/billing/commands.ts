import type { NanoUsd } from '../platform/money';
import type { BillingRules } from './rules';
import type { Gateway } from './state';

/**
 * The commands of billing-{workspaceId}, imperative. Time and rules are inputs, never read by the
 * domain: `now` is the ISO time of the decision, `rules` the configured limits.
 */

export type ChargeOutcome =
  { status: 'succeeded'; paymentIntentId: string } | { status: 'failed'; paymentIntentId: string | null; code: string; reason: string };

export type AttachPaymentMethod = {
  type: 'AttachPaymentMethod';
  data: { workspaceId: string; paymentMethodId: string; brand: string; last4: string; customerId: string | null; gateway: Gateway };
};

/** `depositId` is derived from the client's Idempotency-Key: the same key finds the same deposit. */
export type RequestDeposit = {
  type: 'RequestDeposit';
  data: { workspaceId: string; depositId: string; amount: NanoUsd; by: string; rules: BillingRules };
};

/** How the charge of a deposit ended. The first outcome wins; a later one (a webhook after the answer) changes nothing. */
export type RecordDepositOutcome = {
  type: 'RecordDepositOutcome';
  data: { workspaceId: string; depositId: string; outcome: ChargeOutcome };
};

export type ConfigureAutoReload = {
  type: 'ConfigureAutoReload';
  data: {
    workspaceId: string;
    enabled: boolean;
    threshold: NanoUsd;
    amount: NanoUsd;
    monthlyCap: NanoUsd | null;
    by: string;
    rules: BillingRules;
  };
};

/**
 * Reload if the balance calls for it. `reloadId` must be derived from the revision the state was
 * read at, and the event appended with exactly that revision: one winner.
 */
export type TriggerReload = {
  type: 'TriggerReload';
  data: { workspaceId: string; reloadId: string; balance: NanoUsd; now: string };
};

/** How the charge of a reload ended. A failure also suspends auto-reload (no retry storm on a bad card). */
export type RecordReloadOutcome = {
  type: 'RecordReloadOutcome';
  data: { workspaceId: string; reloadId: string; outcome: ChargeOutcome };
};

/** An operator grants credit. `grantId` is derived from the Idempotency-Key: the same key finds the same grant. */
export type GrantCredit = {
  type: 'GrantCredit';
  data: {
    workspaceId: string;
    grantId: string;
    amount: NanoUsd;
    priority: number;
    expiresAt: string | null;
    note: string;
    by: string;
    now: string;
    rules: BillingRules;
  };
};

/** Record a grant's expiry; nothing before `expiresAt` (by `now`), nothing a second time. */
export type ExpireCredit = { type: 'ExpireCredit'; data: { workspaceId: string; grantId: string; now: string } };

/**
 * Credit part or all of a request's cost. `requestCost` is the request's debit, read from its own
 * stream by the caller (decide is pure); the decider holds the notes of this stream against it.
 */
export type IssueCreditNote = {
  type: 'IssueCreditNote';
  data: { workspaceId: string; creditNoteId: string; requestId: string; requestCost: NanoUsd; amount: NanoUsd; reason: string; by: string };
};

export type BillingCommand =
  | AttachPaymentMethod
  | RequestDeposit
  | RecordDepositOutcome
  | ConfigureAutoReload
  | TriggerReload
  | RecordReloadOutcome
  | GrantCredit
  | ExpireCredit
  | IssueCreditNote;
