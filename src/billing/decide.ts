import { conflict, invalid, notFound } from '../platform/errors';
import { assertNever } from '../platform/event';
import { formatUsd, type NanoUsd } from '../platform/money';
import type { BillingCommand, ChargeOutcome } from './commands';
import type {
  AutoReloadConfigured,
  AutoReloadFailed,
  AutoReloadSucceeded,
  AutoReloadSuspended,
  AutoReloadTriggered,
  BillingEvent,
  CreditExpired,
  CreditGranted,
  CreditNoteIssued,
  DepositFailed,
  DepositRequested,
  DepositSucceeded,
  PaymentMethodAttached,
} from './events';
import { MAX_RELOADS_PER_MONTH, minimumDeposit, reloadBlocker, suspensionReason, validateCharge } from './rules';
import { evolve } from './evolve';
import { MAX_PRIORITY, MIN_PRIORITY, NEVER_MS, PAID_PRIORITY } from './grants';
import { type BillingState, initialBillingState } from './state';

/**
 * The billing decider: `decide(command, state)` returns the events to append — none when there is
 * nothing to do (the same card again, a settled charge settled again, a reload not due) — or throws
 * a DomainError when a rule refuses the command. What a caller needs back (the deposit, the reload)
 * it reads from the state after evolving these events (`evolveDecided`).
 */
export function decide(command: BillingCommand, state: BillingState): BillingEvent[] {
  switch (command.type) {
    case 'AttachPaymentMethod': {
      const c = command.data;
      if (state.paymentMethod?.id === c.paymentMethodId && !state.suspended) return [];
      const { workspaceId, paymentMethodId, brand, last4, customerId, gateway } = c;
      return [
        {
          type: 'PaymentMethodAttached',
          data: { workspaceId, paymentMethodId, brand, last4, customerId, gateway },
        } satisfies PaymentMethodAttached,
      ];
    }
    case 'RequestDeposit': {
      const c = command.data;
      const existing = state.deposits.get(c.depositId);
      if (existing) {
        if (existing.amount !== c.amount) {
          throw conflict(
            `This Idempotency-Key was already used for a deposit of ${formatUsd(existing.amount)} USD; use a new key for a new deposit`,
          );
        }
        return [];
      }
      validateCharge(c.amount, c.rules, 'amount');
      const min = minimumDeposit(state, c.rules);
      if (c.amount < min) {
        throw invalid(
          state.deposited > 0n
            ? `A deposit must be at least ${formatUsd(min)} USD`
            : `The first deposit must be at least ${formatUsd(min)} USD`,
          'amount',
        );
      }
      const pm = state.paymentMethod;
      if (!pm) throw conflict('Attach a payment method before making a deposit');
      const data = {
        workspaceId: c.workspaceId,
        depositId: c.depositId,
        amountNanoUsd: c.amount.toString(),
        paymentMethodId: pm.id,
        customerId: pm.customerId,
        gateway: pm.gateway,
        by: c.by,
      };
      return [{ type: 'DepositRequested', data } satisfies DepositRequested];
    }
    case 'RecordDepositOutcome': {
      const c = command.data;
      const rec = state.deposits.get(c.depositId);
      if (!rec) throw notFound(`No deposit ${c.depositId}`);
      if (rec.status !== 'requested') return [];
      const base = { workspaceId: c.workspaceId, depositId: rec.depositId, amountNanoUsd: rec.amount.toString() };
      const o = c.outcome;
      if (o.status === 'succeeded')
        return [{ type: 'DepositSucceeded', data: { ...base, paymentIntentId: o.paymentIntentId, by: rec.by } } satisfies DepositSucceeded];
      return [
        {
          type: 'DepositFailed',
          data: { ...base, paymentIntentId: o.paymentIntentId, reason: o.reason, code: o.code, by: rec.by },
        } satisfies DepositFailed,
      ];
    }
    case 'ConfigureAutoReload':
      return [configureAutoReload(command.data, state)];
    case 'TriggerReload': {
      const c = command.data;
      if (reloadBlocker(state, c.balance, c.now)) return [];
      const e: AutoReloadTriggered = {
        type: 'AutoReloadTriggered',
        data: {
          workspaceId: c.workspaceId,
          reloadId: c.reloadId,
          amountNanoUsd: state.autoReload!.amount.toString(),
          balanceNanoUsd: c.balance.toString(),
        },
      };
      return [e];
    }
    case 'RecordReloadOutcome': {
      const c = command.data;
      const rec = state.reloads.get(c.reloadId);
      if (!rec) throw notFound(`No reload ${c.reloadId}`);
      if (rec.status !== 'in_flight') return [];
      return reloadOutcome(c.workspaceId, rec.reloadId, rec.amount.toString(), c.outcome);
    }
    case 'GrantCredit':
      return grantCredit(command.data, state);
    case 'ExpireCredit': {
      const c = command.data;
      const g = state.grants.get(c.grantId);
      if (!g) throw notFound(`No credit grant ${c.grantId}`);
      if (g.expiredAt || g.expiresAt === null || Date.parse(g.expiresAt) > Date.parse(c.now)) return [];
      return [
        { type: 'CreditExpired', data: { workspaceId: c.workspaceId, grantId: g.grantId, expiresAt: g.expiresAt } } satisfies CreditExpired,
      ];
    }
    case 'IssueCreditNote':
      return issueCreditNote(command.data, state);
    default:
      return assertNever(command);
  }
}

/** What earlier credit notes already gave back of a request's cost. */
export function creditedOf(state: BillingState, requestId: string): NanoUsd {
  let sum = 0n;
  for (const n of state.creditNotes.values()) if (n.requestId === requestId) sum += n.amount;
  return sum;
}

function issueCreditNote(c: Extract<BillingCommand, { type: 'IssueCreditNote' }>['data'], state: BillingState): CreditNoteIssued[] {
  const existing = state.creditNotes.get(c.creditNoteId);
  if (existing) {
    if (existing.amount !== c.amount || existing.requestId !== c.requestId || existing.reason !== c.reason) {
      throw conflict('This Idempotency-Key was already used for another credit note; use a new key for a new credit note');
    }
    return [];
  }
  if (c.amount <= 0n) throw invalid('amount must be more than 0', 'amount');
  const left = c.requestCost - creditedOf(state, c.requestId);
  if (c.amount > left) {
    throw invalid(
      `amount must be at most ${formatUsd(left > 0n ? left : 0n)} USD: the request's cost (${formatUsd(c.requestCost)} USD) less its earlier credit notes`,
      'amount',
    );
  }
  return [
    {
      type: 'CreditNoteIssued',
      data: {
        workspaceId: c.workspaceId,
        creditNoteId: c.creditNoteId,
        requestId: c.requestId,
        amountNanoUsd: c.amount.toString(),
        reason: c.reason,
        by: c.by,
      },
    },
  ];
}

function grantCredit(c: Extract<BillingCommand, { type: 'GrantCredit' }>['data'], state: BillingState): CreditGranted[] {
  const existing = state.grants.get(c.grantId);
  if (existing) {
    if (
      existing.amount !== c.amount ||
      existing.priority !== c.priority ||
      existing.expiresAt !== c.expiresAt ||
      existing.note !== c.note
    ) {
      throw conflict('This Idempotency-Key was already used for another credit grant; use a new key for a new grant');
    }
    return [];
  }
  validateCharge(c.amount, c.rules, 'amount');
  if (!Number.isInteger(c.priority) || c.priority < MIN_PRIORITY || c.priority > MAX_PRIORITY) {
    throw invalid(
      `priority must be a whole number from ${MIN_PRIORITY} to ${MAX_PRIORITY} (lower is drawn first; deposits are ${PAID_PRIORITY})`,
      'priority',
    );
  }
  if (c.expiresAt !== null) {
    const ms = Date.parse(c.expiresAt);
    if (!(ms > Date.parse(c.now))) throw invalid('expiresAt must be in the future', 'expiresAt');
    if (ms >= NEVER_MS) throw invalid('expiresAt is too far in the future', 'expiresAt');
  }
  return [
    {
      type: 'CreditGranted',
      data: {
        workspaceId: c.workspaceId,
        grantId: c.grantId,
        category: 'promotional',
        amountNanoUsd: c.amount.toString(),
        priority: c.priority,
        expiresAt: c.expiresAt === null ? null : new Date(c.expiresAt).toISOString(),
        note: c.note,
        by: c.by,
      },
    },
  ];
}

function configureAutoReload(
  c: Extract<BillingCommand, { type: 'ConfigureAutoReload' }>['data'],
  state: BillingState,
): AutoReloadConfigured {
  const { rules } = c;
  if (c.threshold < 0n) throw invalid('threshold must be at least 0', 'threshold');
  validateCharge(c.amount, rules, 'amount');
  if (c.amount < rules.minReload) throw invalid(`amount must be at least ${formatUsd(rules.minReload)} USD`, 'amount');
  // A reload must lift the balance to the threshold or above; otherwise every later debit (each
  // settlement included) would find the balance still below it and charge the card again.
  if (c.threshold > c.amount) {
    throw invalid(
      `threshold must be at most the reload amount (${formatUsd(c.amount)} USD), so that one reload lifts the balance above it`,
      'threshold',
    );
  }
  if (c.monthlyCap !== null && c.monthlyCap < c.amount) throw invalid('monthlyCap must be at least the reload amount', 'monthlyCap');
  if (c.monthlyCap !== null) validateCharge(c.monthlyCap, { maxCharge: rules.maxCharge * MAX_RELOADS_PER_MONTH }, 'monthlyCap');
  if (c.enabled && !state.paymentMethod) throw conflict('Attach a payment method before enabling auto-reload');
  return {
    type: 'AutoReloadConfigured',
    data: {
      workspaceId: c.workspaceId,
      enabled: c.enabled,
      thresholdNanoUsd: c.threshold.toString(),
      amountNanoUsd: c.amount.toString(),
      monthlyCapNanoUsd: c.monthlyCap === null ? null : c.monthlyCap.toString(),
      by: c.by,
    },
  };
}

function reloadOutcome(workspaceId: string, reloadId: string, amountNanoUsd: string, o: ChargeOutcome): BillingEvent[] {
  if (o.status === 'succeeded') {
    return [
      {
        type: 'AutoReloadSucceeded',
        data: { workspaceId, reloadId, amountNanoUsd, paymentIntentId: o.paymentIntentId },
      } satisfies AutoReloadSucceeded,
    ];
  }
  const failed: AutoReloadFailed = {
    type: 'AutoReloadFailed',
    data: { workspaceId, reloadId, amountNanoUsd, paymentIntentId: o.paymentIntentId, reason: o.reason, code: o.code },
  };
  const suspended: AutoReloadSuspended = {
    type: 'AutoReloadSuspended',
    data: { workspaceId, reloadId, reason: suspensionReason(o.code, o.reason) },
  };
  return [failed, suspended];
}

/** The decider of billing-{workspaceId}, in the shape `handleCommand` and the tests take. */
export const billingDecider = { initial: initialBillingState, evolve, decide };
