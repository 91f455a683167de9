import { conflict, invalid, notFound } from '../errors';
import type { Event } from '../event';
import { formatUsd, NANO_PER_USD, NanoUsd } from '../money';
import type {
  AutoReloadConfigured,
  AutoReloadFailed,
  AutoReloadSucceeded,
  AutoReloadSuspended,
  AutoReloadTriggered,
  DepositFailed,
  DepositRequested,
  DepositSucceeded,
  PaymentMethodAttached,
} from './events';

/**
 * The billing-{workspaceId} aggregate: what is on file (card, auto-reload settings), which deposits
 * and reloads exist and how they ended. `evolve` folds recorded events; the `decide…` functions are
 * pure and return the events to append (none when there is nothing to do), or throw a DomainError.
 */

/** What evolve needs of a recorded event (the store's RecordedEvent satisfies it). */
export interface BillingRecord {
  type: string;
  data: unknown;
  /** ISO-8601 time the store recorded it (months for the auto-reload cap). */
  created: string;
}

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

export interface BillingState {
  workspaceId: string | null;
  customerId: string | null;
  paymentMethod: PaymentMethodOnFile | null;
  deposits: Map<string, DepositRecord>;
  /** Sum of succeeded deposits. */
  deposited: NanoUsd;
  /** Sum of succeeded reloads. */
  reloaded: NanoUsd;
  autoReload: AutoReloadSettings | null;
  suspended: Suspension | null;
  /** The reload triggered and not yet settled (at most one). */
  inFlight: string | null;
  reloads: Map<string, ReloadRecord>;
  /** Per UTC month: amounts of reloads triggered and not failed (in flight or succeeded). */
  reloadedByMonth: Map<string, NanoUsd>;
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
  };
}

export const monthOf = (iso: string): string => iso.slice(0, 7);

/** Folds one event into the state (mutates and returns it: a fold always starts from a fresh initial state). */
export function evolveBilling(state: BillingState, e: BillingRecord): BillingState {
  switch (e.type) {
    case 'PaymentMethodAttached': {
      const d = e.data as PaymentMethodAttached['data'];
      state.workspaceId = d.workspaceId;
      state.paymentMethod = { id: d.paymentMethodId, brand: d.brand, last4: d.last4, customerId: d.customerId, gateway: d.gateway };
      if (d.customerId) state.customerId = d.customerId;
      // A new card lifts a suspension: the admin has acted on it.
      state.suspended = null;
      break;
    }
    case 'DepositRequested': {
      const d = e.data as DepositRequested['data'];
      state.workspaceId = d.workspaceId;
      if (!state.deposits.has(d.depositId)) {
        state.deposits.set(d.depositId, {
          depositId: d.depositId,
          amount: BigInt(d.amountNanoUsd),
          status: 'requested',
          paymentMethodId: d.paymentMethodId,
          customerId: d.customerId,
          gateway: d.gateway,
          by: d.by,
          requestedAt: e.created,
          paymentIntentId: null,
          code: null,
          reason: null,
        });
      }
      break;
    }
    case 'DepositSucceeded': {
      const d = e.data as DepositSucceeded['data'];
      state.workspaceId = d.workspaceId;
      const rec = state.deposits.get(d.depositId) ?? legacyDeposit(d.depositId, d.amountNanoUsd, d.by, e.created);
      rec.status = 'succeeded';
      rec.amount = BigInt(d.amountNanoUsd);
      rec.paymentIntentId = d.paymentIntentId;
      state.deposits.set(d.depositId, rec);
      state.deposited += BigInt(d.amountNanoUsd);
      break;
    }
    case 'DepositFailed': {
      const d = e.data as DepositFailed['data'];
      state.workspaceId = d.workspaceId;
      const rec = state.deposits.get(d.depositId) ?? legacyDeposit(d.depositId, d.amountNanoUsd, d.by, e.created);
      rec.status = 'failed';
      rec.paymentIntentId = d.paymentIntentId;
      rec.code = d.code;
      rec.reason = d.reason;
      state.deposits.set(d.depositId, rec);
      break;
    }
    case 'AutoReloadConfigured': {
      const d = e.data as AutoReloadConfigured['data'];
      state.workspaceId = d.workspaceId;
      state.autoReload = {
        enabled: d.enabled,
        threshold: BigInt(d.thresholdNanoUsd),
        amount: BigInt(d.amountNanoUsd),
        monthlyCap: d.monthlyCapNanoUsd === null ? null : BigInt(d.monthlyCapNanoUsd),
      };
      // Saving the settings again is how an admin re-enables a suspended auto-reload.
      state.suspended = null;
      break;
    }
    case 'AutoReloadTriggered': {
      const d = e.data as AutoReloadTriggered['data'];
      state.workspaceId = d.workspaceId;
      const month = monthOf(e.created);
      state.reloads.set(d.reloadId, {
        reloadId: d.reloadId,
        amount: BigInt(d.amountNanoUsd),
        status: 'in_flight',
        month,
        triggeredAt: e.created,
        balanceAtTrigger: BigInt(d.balanceNanoUsd),
        paymentMethodId: state.paymentMethod?.id ?? null,
        customerId: state.paymentMethod?.customerId ?? state.customerId,
        paymentIntentId: null,
        code: null,
        reason: null,
      });
      state.inFlight = d.reloadId;
      state.reloadedByMonth.set(month, (state.reloadedByMonth.get(month) ?? 0n) + BigInt(d.amountNanoUsd));
      break;
    }
    case 'AutoReloadSucceeded': {
      const d = e.data as AutoReloadSucceeded['data'];
      const rec = state.reloads.get(d.reloadId);
      if (rec) {
        rec.status = 'succeeded';
        rec.paymentIntentId = d.paymentIntentId;
      }
      if (state.inFlight === d.reloadId) state.inFlight = null;
      state.reloaded += BigInt(d.amountNanoUsd);
      break;
    }
    case 'AutoReloadFailed': {
      const d = e.data as AutoReloadFailed['data'];
      const rec = state.reloads.get(d.reloadId);
      if (rec) {
        rec.status = 'failed';
        rec.paymentIntentId = d.paymentIntentId;
        rec.code = d.code;
        rec.reason = d.reason;
        state.reloadedByMonth.set(rec.month, (state.reloadedByMonth.get(rec.month) ?? 0n) - rec.amount);
      }
      if (state.inFlight === d.reloadId) state.inFlight = null;
      break;
    }
    case 'AutoReloadSuspended': {
      const d = e.data as AutoReloadSuspended['data'];
      state.suspended = { reloadId: d.reloadId, reason: d.reason, at: e.created };
      break;
    }
  }
  return state;
}

function legacyDeposit(depositId: string, amount: string, by: string, at: string): DepositRecord {
  // A deposit settled without a DepositRequested before it (written by hand or by an older version).
  return {
    depositId,
    amount: BigInt(amount),
    status: 'requested',
    paymentMethodId: '',
    customerId: null,
    gateway: 'sandbox',
    by,
    requestedAt: at,
    paymentIntentId: null,
    code: null,
    reason: null,
  };
}

export function foldBilling(events: BillingRecord[]): BillingState {
  let s = initialBillingState();
  for (const e of events) s = evolveBilling(s, e);
  return s;
}

export const billingDecider = { initial: initialBillingState, evolve: evolveBilling };

// ---------------------------------------------------------------------------------------------
// Rules and decisions

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

/** The smallest deposit the workspace may make next. */
export function minimumDeposit(state: BillingState, rules: BillingRules): NanoUsd {
  return state.deposited > 0n ? rules.minDeposit : rules.initialDeposit;
}

type Decision<R> = { events: Event[]; result: R };

export function decideAttachPaymentMethod(
  state: BillingState,
  cmd: { workspaceId: string; paymentMethodId: string; brand: string; last4: string; customerId: string | null; gateway: Gateway },
): Decision<PaymentMethodOnFile> {
  const pm = { id: cmd.paymentMethodId, brand: cmd.brand, last4: cmd.last4, customerId: cmd.customerId, gateway: cmd.gateway };
  const same = state.paymentMethod?.id === cmd.paymentMethodId && !state.suspended;
  if (same) return { events: [], result: pm };
  const e: PaymentMethodAttached = {
    type: 'PaymentMethodAttached',
    data: {
      workspaceId: cmd.workspaceId,
      paymentMethodId: cmd.paymentMethodId,
      brand: cmd.brand,
      last4: cmd.last4,
      customerId: cmd.customerId,
      gateway: cmd.gateway,
    },
  };
  return { events: [e], result: pm };
}

export type DepositDecision =
  | { kind: 'new'; deposit: DepositRecord }
  | { kind: 'existing'; deposit: DepositRecord };

export function decideRequestDeposit(
  state: BillingState,
  cmd: { workspaceId: string; depositId: string; amount: NanoUsd; by: string; now: string },
  rules: BillingRules,
): Decision<DepositDecision> {
  const existing = state.deposits.get(cmd.depositId);
  if (existing) {
    if (existing.amount !== cmd.amount) {
      throw conflict(
        `This Idempotency-Key was already used for a deposit of ${formatUsd(existing.amount)} USD; use a new key for a new deposit`,
      );
    }
    return { events: [], result: { kind: 'existing', deposit: existing } };
  }
  validateCharge(cmd.amount, rules, 'amount');
  const min = minimumDeposit(state, rules);
  if (cmd.amount < min) {
    throw invalid(
      state.deposited > 0n
        ? `A deposit must be at least ${formatUsd(min)} USD`
        : `The first deposit must be at least ${formatUsd(min)} USD`,
      'amount',
    );
  }
  const pm = state.paymentMethod;
  if (!pm) throw conflict('Attach a payment method before making a deposit');
  const e: DepositRequested = {
    type: 'DepositRequested',
    data: {
      workspaceId: cmd.workspaceId,
      depositId: cmd.depositId,
      amountNanoUsd: cmd.amount.toString(),
      paymentMethodId: pm.id,
      customerId: pm.customerId,
      gateway: pm.gateway,
      by: cmd.by,
    },
  };
  const deposit: DepositRecord = {
    depositId: cmd.depositId,
    amount: cmd.amount,
    status: 'requested',
    paymentMethodId: pm.id,
    customerId: pm.customerId,
    gateway: pm.gateway,
    by: cmd.by,
    requestedAt: cmd.now,
    paymentIntentId: null,
    code: null,
    reason: null,
  };
  return { events: [e], result: { kind: 'new', deposit } };
}

export type ChargeOutcome =
  | { status: 'succeeded'; paymentIntentId: string }
  | { status: 'failed'; paymentIntentId: string | null; code: string; reason: string };

/** Records how a deposit ended. The first outcome wins; a later one (a webhook after the response) is a no-op. */
export function decideDepositOutcome(
  state: BillingState,
  cmd: { workspaceId: string; depositId: string; outcome: ChargeOutcome },
): Decision<DepositRecord> {
  const rec = state.deposits.get(cmd.depositId);
  if (!rec) throw notFound(`No deposit ${cmd.depositId}`);
  if (rec.status !== 'requested') return { events: [], result: rec };
  const o = cmd.outcome;
  const events: Event[] =
    o.status === 'succeeded'
      ? [
          {
            type: 'DepositSucceeded',
            data: {
              workspaceId: cmd.workspaceId,
              depositId: rec.depositId,
              amountNanoUsd: rec.amount.toString(),
              paymentIntentId: o.paymentIntentId,
              by: rec.by,
            },
          } satisfies DepositSucceeded,
        ]
      : [
          {
            type: 'DepositFailed',
            data: {
              workspaceId: cmd.workspaceId,
              depositId: rec.depositId,
              amountNanoUsd: rec.amount.toString(),
              paymentIntentId: o.paymentIntentId,
              reason: o.reason,
              code: o.code,
              by: rec.by,
            },
          } satisfies DepositFailed,
        ];
  const settled: DepositRecord = {
    ...rec,
    status: o.status,
    paymentIntentId: o.paymentIntentId,
    code: o.status === 'failed' ? o.code : null,
    reason: o.status === 'failed' ? o.reason : null,
  };
  return { events, result: settled };
}

export function decideConfigureAutoReload(
  state: BillingState,
  cmd: {
    workspaceId: string;
    enabled: boolean;
    threshold: NanoUsd;
    amount: NanoUsd;
    monthlyCap: NanoUsd | null;
    by: string;
  },
  rules: BillingRules,
): Decision<AutoReloadSettings> {
  if (cmd.threshold < 0n) throw invalid('threshold must be at least 0', 'threshold');
  validateCharge(cmd.amount, rules, 'amount');
  if (cmd.amount < rules.minReload) throw invalid(`amount must be at least ${formatUsd(rules.minReload)} USD`, 'amount');
  // A reload must lift the balance to the threshold or above; otherwise every later debit (each
  // settlement included) would find the balance still below it and charge the card again.
  if (cmd.threshold > cmd.amount) {
    throw invalid(`threshold must be at most the reload amount (${formatUsd(cmd.amount)} USD), so that one reload lifts the balance above it`, 'threshold');
  }
  if (cmd.monthlyCap !== null && cmd.monthlyCap < cmd.amount) {
    throw invalid('monthlyCap must be at least the reload amount', 'monthlyCap');
  }
  if (cmd.monthlyCap !== null) validateCharge(cmd.monthlyCap, { ...rules, maxCharge: rules.maxCharge * MAX_RELOADS_PER_MONTH }, 'monthlyCap');
  if (cmd.enabled && !state.paymentMethod) throw conflict('Attach a payment method before enabling auto-reload');
  const e: AutoReloadConfigured = {
    type: 'AutoReloadConfigured',
    data: {
      workspaceId: cmd.workspaceId,
      enabled: cmd.enabled,
      thresholdNanoUsd: cmd.threshold.toString(),
      amountNanoUsd: cmd.amount.toString(),
      monthlyCapNanoUsd: cmd.monthlyCap === null ? null : cmd.monthlyCap.toString(),
      by: cmd.by,
    },
  };
  return { events: [e], result: { enabled: cmd.enabled, threshold: cmd.threshold, amount: cmd.amount, monthlyCap: cmd.monthlyCap } };
}

export type TriggerSkip =
  | 'disabled'
  | 'suspended'
  | 'in_flight'
  | 'no_payment_method'
  | 'no_deposit'
  | 'above_threshold'
  | 'monthly_cap';

export type TriggerResult = { triggered: true; reload: ReloadRecord } | { triggered: false; skip: TriggerSkip; inFlight: string | null };

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

/** Why auto-reload would not charge now, or null when it would. */
export function reloadBlocker(state: BillingState, balance: NanoUsd, nowIso: string): TriggerSkip | null {
  return reloadBlockerOf(
    {
      inFlight: state.inFlight,
      autoReload: state.autoReload,
      suspended: state.suspended,
      paymentMethod: state.paymentMethod,
      deposited: state.deposited,
      reloadedThisMonth: state.reloadedByMonth.get(monthOf(nowIso)) ?? 0n,
    },
    balance,
  );
}

/** The same rules over facts however they were read. */
export function reloadBlockerOf(f: ReloadFacts, balance: NanoUsd): TriggerSkip | null {
  const ar = f.autoReload;
  if (f.inFlight) return 'in_flight';
  if (!ar || !ar.enabled) return 'disabled';
  if (f.suspended) return 'suspended';
  if (!f.paymentMethod) return 'no_payment_method';
  // Auto-reload tops up a funded balance: before the first deposit there is nothing to top up.
  if (f.deposited === 0n) return 'no_deposit';
  if (balance >= effectiveThreshold(ar)) return 'above_threshold';
  if (ar.monthlyCap !== null && f.reloadedThisMonth + ar.amount > ar.monthlyCap) return 'monthly_cap';
  return null;
}

/**
 * Decides whether the balance calls for a reload. `reloadId` must be derived from the revision the
 * state was read at, and the event appended with exactly that revision: one winner.
 */
export function decideTriggerReload(
  state: BillingState,
  cmd: { workspaceId: string; reloadId: string; balance: NanoUsd; now: string },
): Decision<TriggerResult> {
  const skip = reloadBlocker(state, cmd.balance, cmd.now);
  if (skip) return { events: [], result: { triggered: false, skip, inFlight: state.inFlight } };
  const ar = state.autoReload!;
  const e: AutoReloadTriggered = {
    type: 'AutoReloadTriggered',
    data: {
      workspaceId: cmd.workspaceId,
      reloadId: cmd.reloadId,
      amountNanoUsd: ar.amount.toString(),
      balanceNanoUsd: cmd.balance.toString(),
    },
  };
  const reload: ReloadRecord = {
    reloadId: cmd.reloadId,
    amount: ar.amount,
    status: 'in_flight',
    month: monthOf(cmd.now),
    triggeredAt: cmd.now,
    balanceAtTrigger: cmd.balance,
    paymentMethodId: state.paymentMethod!.id,
    customerId: state.paymentMethod!.customerId ?? state.customerId,
    paymentIntentId: null,
    code: null,
    reason: null,
  };
  return { events: [e], result: { triggered: true, reload } };
}

/** Records how a reload ended. A failure also suspends auto-reload (no retry storm on a bad card). */
export function decideReloadOutcome(
  state: BillingState,
  cmd: { workspaceId: string; reloadId: string; outcome: ChargeOutcome },
): Decision<ReloadRecord> {
  const rec = state.reloads.get(cmd.reloadId);
  if (!rec) throw notFound(`No reload ${cmd.reloadId}`);
  if (rec.status !== 'in_flight') return { events: [], result: rec };
  const o = cmd.outcome;
  if (o.status === 'succeeded') {
    const e: AutoReloadSucceeded = {
      type: 'AutoReloadSucceeded',
      data: { workspaceId: cmd.workspaceId, reloadId: rec.reloadId, amountNanoUsd: rec.amount.toString(), paymentIntentId: o.paymentIntentId },
    };
    return { events: [e], result: { ...rec, status: 'succeeded', paymentIntentId: o.paymentIntentId } };
  }
  const failed: AutoReloadFailed = {
    type: 'AutoReloadFailed',
    data: {
      workspaceId: cmd.workspaceId,
      reloadId: rec.reloadId,
      amountNanoUsd: rec.amount.toString(),
      paymentIntentId: o.paymentIntentId,
      reason: o.reason,
      code: o.code,
    },
  };
  const suspended: AutoReloadSuspended = {
    type: 'AutoReloadSuspended',
    data: { workspaceId: cmd.workspaceId, reloadId: rec.reloadId, reason: suspensionReason(o.code, o.reason) },
  };
  return {
    events: [failed, suspended],
    result: { ...rec, status: 'failed', paymentIntentId: o.paymentIntentId, code: o.code, reason: o.reason },
  };
}

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

function validateCharge(amount: NanoUsd, rules: BillingRules, field: string): void {
  if (amount <= 0n) throw invalid(`${field} must be more than 0`, field);
  if (!isWholeCents(amount)) throw invalid(`${field} must be a whole number of cents (a card is charged in cents)`, field);
  if (amount > rules.maxCharge) throw invalid(`${field} must be at most ${formatUsd(rules.maxCharge)} USD`, field);
}

