import { assertNever, type EventRecord, recorded } from '../platform/event';
import type { BillingEvent } from './events';
import {
  type BillingState,
  type CreditGrantRecord,
  type CreditNoteRecord,
  type DepositRecord,
  initialBillingState,
  monthOf,
  type ReloadRecord,
} from './state';

/**
 * How each event of billing-{workspaceId} changes its state. `evolve` never mutates: it returns a
 * new state (and new maps where they change), so a state once read stays as it was.
 */

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
        reloads: rec
          ? withEntry(state.reloads, d.reloadId, { ...rec, status: 'succeeded', paymentIntentId: d.paymentIntentId })
          : state.reloads,
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
        reloads: withEntry(state.reloads, d.reloadId, {
          ...rec,
          status: 'failed',
          paymentIntentId: d.paymentIntentId,
          code: d.code,
          reason: d.reason,
        }),
        // A failed reload took no money: it no longer counts against the monthly cap.
        reloadedByMonth: withEntry(state.reloadedByMonth, rec.month, (state.reloadedByMonth.get(rec.month) ?? 0n) - rec.amount),
        inFlight,
      };
    }
    case 'AutoReloadSuspended':
      return { ...state, suspended: { reloadId: event.data.reloadId, reason: event.data.reason, at: event.created } };
    case 'CreditGranted': {
      const d = event.data;
      if (state.grants.has(d.grantId)) return state;
      const g: CreditGrantRecord = {
        grantId: d.grantId,
        category: d.category,
        amount: BigInt(d.amountNanoUsd),
        priority: d.priority,
        expiresAt: d.expiresAt,
        note: d.note,
        by: d.by,
        grantedAt: event.created,
        expiredAt: null,
      };
      return { ...state, workspaceId: d.workspaceId, grants: withEntry(state.grants, d.grantId, g) };
    }
    case 'CreditExpired': {
      const g = state.grants.get(event.data.grantId);
      if (!g || g.expiredAt) return state;
      return { ...state, grants: withEntry(state.grants, g.grantId, { ...g, expiredAt: event.created }) };
    }
    case 'CreditNoteIssued': {
      const d = event.data;
      if (state.creditNotes.has(d.creditNoteId)) return state;
      const note: CreditNoteRecord = {
        creditNoteId: d.creditNoteId,
        requestId: d.requestId,
        amount: BigInt(d.amountNanoUsd),
        reason: d.reason,
        by: d.by,
        issuedAt: event.created,
      };
      return { ...state, workspaceId: d.workspaceId, creditNotes: withEntry(state.creditNotes, d.creditNoteId, note) };
    }
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
  fold(
    events.map((e) => recorded(e, at)),
    state,
  );
