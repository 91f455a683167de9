import { assertNever, type EventRecord, recorded } from '../event';
import type { NanoUsd } from '../money';
import type { BillingEvent } from './events';

/**
 * The state of billing-{workspaceId}, folded from its events: what is on file (card, auto-reload
 * settings), which deposits and reloads exist and how they ended. `evolve` never mutates: it returns
 * a new state (and new maps where they change).
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

const withEntry = <V>(m: ReadonlyMap<string, V>, key: string, value: V): ReadonlyMap<string, V> => new Map(m).set(key, value);

/** Folds one recorded event into a new state. */
export function evolve(state: BillingState, event: EventRecord<BillingEvent>): BillingState {
  switch (event.type) {
    case 'PaymentMethodAttached': {
      const d = event.data;
      return {
        ...state,
        workspaceId: d.workspaceId,
        paymentMethod: { id: d.paymentMethodId, brand: d.brand, last4: d.last4, customerId: d.customerId, gateway: d.gateway },
        customerId: d.customerId ? d.customerId : state.customerId,
        // A new card lifts a suspension: the admin has acted on it.
        suspended: null,
      };
    }
    case 'DepositRequested': {
      const d = event.data;
      if (state.deposits.has(d.depositId)) return { ...state, workspaceId: d.workspaceId };
      const deposit: DepositRecord = {
        depositId: d.depositId,
        amount: BigInt(d.amountNanoUsd),
        status: 'requested',
        paymentMethodId: d.paymentMethodId,
        customerId: d.customerId,
        gateway: d.gateway,
        by: d.by,
        requestedAt: event.created,
        paymentIntentId: null,
        code: null,
        reason: null,
      };
      return { ...state, workspaceId: d.workspaceId, deposits: withEntry(state.deposits, d.depositId, deposit) };
    }
    case 'DepositSucceeded': {
      const d = event.data;
      const rec = state.deposits.get(d.depositId) ?? legacyDeposit(d.depositId, d.amountNanoUsd, d.by, event.created);
      const settled: DepositRecord = { ...rec, status: 'succeeded', amount: BigInt(d.amountNanoUsd), paymentIntentId: d.paymentIntentId };
      return {
        ...state,
        workspaceId: d.workspaceId,
        deposits: withEntry(state.deposits, d.depositId, settled),
        deposited: state.deposited + BigInt(d.amountNanoUsd),
      };
    }
    case 'DepositFailed': {
      const d = event.data;
      const rec = state.deposits.get(d.depositId) ?? legacyDeposit(d.depositId, d.amountNanoUsd, d.by, event.created);
      const failed: DepositRecord = { ...rec, status: 'failed', paymentIntentId: d.paymentIntentId, code: d.code, reason: d.reason };
      return { ...state, workspaceId: d.workspaceId, deposits: withEntry(state.deposits, d.depositId, failed) };
    }
    case 'AutoReloadConfigured': {
      const d = event.data;
      return {
        ...state,
        workspaceId: d.workspaceId,
        autoReload: {
          enabled: d.enabled,
          threshold: BigInt(d.thresholdNanoUsd),
          amount: BigInt(d.amountNanoUsd),
          monthlyCap: d.monthlyCapNanoUsd === null ? null : BigInt(d.monthlyCapNanoUsd),
        },
        // Saving the settings again is how an admin re-enables a suspended auto-reload.
        suspended: null,
      };
    }
    case 'AutoReloadTriggered': {
      const d = event.data;
      const month = monthOf(event.created);
      const amount = BigInt(d.amountNanoUsd);
      const reload: ReloadRecord = {
        reloadId: d.reloadId,
        amount,
        status: 'in_flight',
        month,
        triggeredAt: event.created,
        balanceAtTrigger: BigInt(d.balanceNanoUsd),
        paymentMethodId: state.paymentMethod?.id ?? null,
        customerId: state.paymentMethod?.customerId ?? state.customerId,
        paymentIntentId: null,
        code: null,
        reason: null,
      };
      return {
        ...state,
        workspaceId: d.workspaceId,
        reloads: withEntry(state.reloads, d.reloadId, reload),
        inFlight: d.reloadId,
        reloadedByMonth: withEntry(state.reloadedByMonth, month, (state.reloadedByMonth.get(month) ?? 0n) + amount),
      };
    }
    case 'AutoReloadSucceeded': {
      const d = event.data;
      const rec = state.reloads.get(d.reloadId);
      return {
        ...state,
        reloads: rec ? withEntry(state.reloads, d.reloadId, { ...rec, status: 'succeeded', paymentIntentId: d.paymentIntentId }) : state.reloads,
        inFlight: state.inFlight === d.reloadId ? null : state.inFlight,
        reloaded: state.reloaded + BigInt(d.amountNanoUsd),
      };
    }
    case 'AutoReloadFailed': {
      const d = event.data;
      const rec = state.reloads.get(d.reloadId);
      const inFlight = state.inFlight === d.reloadId ? null : state.inFlight;
      if (!rec) return { ...state, inFlight };
      return {
        ...state,
        reloads: withEntry(state.reloads, d.reloadId, { ...rec, status: 'failed', paymentIntentId: d.paymentIntentId, code: d.code, reason: d.reason }),
        // A failed reload took no money: it no longer counts against the monthly cap.
        reloadedByMonth: withEntry(state.reloadedByMonth, rec.month, (state.reloadedByMonth.get(rec.month) ?? 0n) - rec.amount),
        inFlight,
      };
    }
    case 'AutoReloadSuspended':
      return { ...state, suspended: { reloadId: event.data.reloadId, reason: event.data.reason, at: event.created } };
    default:
      return assertNever(event);
  }
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

/** The state of a whole stream. */
export const fold = (events: readonly EventRecord<BillingEvent>[], from: BillingState = initialBillingState()): BillingState =>
  events.reduce(evolve, from);

/**
 * The state after events just decided, as if the store recorded them at `at`: how a caller reads the
 * result of a decision (the deposit requested, the reload triggered) without decide returning one.
 */
export const evolveDecided = (state: BillingState, events: readonly BillingEvent[], at: string): BillingState =>
  fold(events.map((e) => recorded(e, at)), state);
