import { invalid } from '../platform/errors';
import { formatUsd, NANO_PER_USD, NanoUsd } from '../platform/money';
import { type AutoReloadSettings, type BillingState, monthOf } from './state';

/**
 * The rules of billing, pure and shared: what a charge may be, the smallest deposit, when
 * auto-reload charges (the decider, the worker and the reactor all ask `reloadBlockerOf`), and what
 * a suspension tells the admins.
 */

export interface BillingRules {
  /** The first deposit (the spec's initial deposit): 100 USD by default. */
  initialDeposit: NanoUsd;
  /** Every later deposit. */
  minDeposit: NanoUsd;
  /** Auto-reload amount. */
  minReload: NanoUsd;
  /** Largest single card charge (Stripe's limit for USD is 999 999.99). */
  maxCharge: NanoUsd;
}

export const MIN_RELOAD = 10n * NANO_PER_USD;
export const MAX_CHARGE = 99_999_999n * 10_000_000n; // 999 999.99 USD
export const NANO_PER_CENT = 10_000_000n;
/** A monthly cap left unset (or null) on the API defaults to this many reloads of the amount. */
export const DEFAULT_CAP_RELOADS = 5n;
/** The largest monthly cap is this many of the largest charge. */
export const MAX_RELOADS_PER_MONTH = 100n;

/** The monthly cap an admin gets without naming one: auto-reload never charges without a bound. */
export const defaultMonthlyCap = (amount: NanoUsd): NanoUsd => amount * DEFAULT_CAP_RELOADS;

export const isWholeCents = (amount: NanoUsd) => amount % NANO_PER_CENT === 0n;

/** An amount a card may be charged: more than 0, whole cents, at most the largest charge. `field` names it in the error. */
export function validateCharge(amount: NanoUsd, rules: Pick<BillingRules, 'maxCharge'>, field: string): void {
  if (amount <= 0n) throw invalid(`${field} must be more than 0`, field);
  if (!isWholeCents(amount)) throw invalid(`${field} must be a whole number of cents (a card is charged in cents)`, field);
  if (amount > rules.maxCharge) throw invalid(`${field} must be at most ${formatUsd(rules.maxCharge)} USD`, field);
}

/** The smallest deposit the workspace may make next, given what it has deposited. */
export function minimumDeposit(
  state: Pick<BillingState, 'deposited'>,
  rules: Pick<BillingRules, 'initialDeposit' | 'minDeposit'>,
): NanoUsd {
  return state.deposited > 0n ? rules.minDeposit : rules.initialDeposit;
}

export type TriggerSkip = 'disabled' | 'suspended' | 'in_flight' | 'no_payment_method' | 'no_deposit' | 'above_threshold' | 'monthly_cap';

/**
 * The threshold auto-reload acts on. Settings recorded before the rule "threshold ≤ amount" may
 * hold a higher one; capping it at the amount keeps one reload from leaving the balance below it
 * (which made every later debit charge the card again).
 */
export const effectiveThreshold = (ar: Pick<AutoReloadSettings, 'threshold' | 'amount'>): NanoUsd =>
  ar.threshold > ar.amount ? ar.amount : ar.threshold;

/**
 * What auto-reload's rules look at: the billing state folded from the ledger, or the same facts read
 * from the projections (the reactor). Anything truthy in `inFlight`, `suspended`, `paymentMethod`.
 */
export interface ReloadFacts {
  inFlight: string | object | null;
  autoReload: AutoReloadSettings | null;
  suspended: object | null;
  paymentMethod: object | null;
  deposited: NanoUsd;
  /** Reloads triggered (and not failed) in the current UTC month. */
  reloadedThisMonth: NanoUsd;
}

/**
 * The reasons not to charge that the settings alone decide (no balance, no deposit needed), or
 * null. The reactor checks them before it reads the balance: most workspaces have no auto-reload.
 */
export function settingsBlockerOf(f: Pick<ReloadFacts, 'inFlight' | 'autoReload' | 'suspended' | 'paymentMethod'>): TriggerSkip | null {
  const ar = f.autoReload;
  if (f.inFlight) return 'in_flight';
  if (!ar || !ar.enabled) return 'disabled';
  if (f.suspended) return 'suspended';
  if (!f.paymentMethod) return 'no_payment_method';
  return null;
}

/** Why auto-reload would not charge now, or null when it would: the rules over facts however they were read. */
export function reloadBlockerOf(f: ReloadFacts, balance: NanoUsd): TriggerSkip | null {
  const early = settingsBlockerOf(f);
  if (early) return early;
  const ar = f.autoReload!;
  // Auto-reload tops up a funded balance: before the first deposit there is nothing to top up.
  if (f.deposited === 0n) return 'no_deposit';
  if (balance >= effectiveThreshold(ar)) return 'above_threshold';
  if (ar.monthlyCap !== null && f.reloadedThisMonth + ar.amount > ar.monthlyCap) return 'monthly_cap';
  return null;
}

/** The same rules over the billing state folded from the ledger, at `nowIso` (the month the cap counts). */
export function reloadBlocker(state: BillingState, balance: NanoUsd, nowIso: string): TriggerSkip | null {
  return reloadBlockerOf({ ...state, reloadedThisMonth: state.reloadedByMonth.get(monthOf(nowIso)) ?? 0n }, balance);
}

/** What the admins read when a failed reload suspended auto-reload. */
export function suspensionReason(code: string, reason: string): string {
  switch (code) {
    case 'authentication_required':
      return 'The card needs authentication (3-D Secure) for every charge, which an automatic reload cannot do. Add another card or save the auto-reload settings again after authenticating.';
    case 'card_declined':
    case 'insufficient_funds':
    case 'expired_card':
    case 'incorrect_cvc':
      return `The card was declined (${code}): ${reason}. Add another card or save the auto-reload settings again to resume.`;
    default:
      return `The auto-reload charge failed (${code}): ${reason}. Add another card or save the auto-reload settings again to resume.`;
  }
}
