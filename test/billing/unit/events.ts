import type { BillingCommand, ChargeOutcome } from '../../../src/billing/commands';
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
} from '../../../src/billing/events';
import { BillingRules, MAX_CHARGE, MIN_RELOAD, suspensionReason } from '../../../src/billing/rules';
import { usd } from '../../../src/platform/money';

// The facts and commands the billing decider tests are written in.

export const WS = 'ws-1';
export const rules: BillingRules = { initialDeposit: usd(100), minDeposit: usd(10), minReload: MIN_RELOAD, maxCharge: MAX_CHARGE };

export const attached = (pm = 'pm_card_visa'): PaymentMethodAttached => ({
  type: 'PaymentMethodAttached',
  data: { workspaceId: WS, paymentMethodId: pm, brand: 'visa', last4: '4242', customerId: null, gateway: 'sandbox' },
});
export const depositRequested = (depositId: string, amount: bigint, pm = 'pm_card_visa'): DepositRequested => ({
  type: 'DepositRequested',
  data: {
    workspaceId: WS,
    depositId,
    amountNanoUsd: amount.toString(),
    paymentMethodId: pm,
    customerId: null,
    gateway: 'sandbox',
    by: 'u',
  },
});
export const depositSucceeded = (depositId: string, amount: bigint, pi: string): DepositSucceeded => ({
  type: 'DepositSucceeded',
  data: { workspaceId: WS, depositId, amountNanoUsd: amount.toString(), paymentIntentId: pi, by: 'u' },
});
export const depositFailed = (depositId: string, amount: bigint, pi: string | null, code: string, reason: string): DepositFailed => ({
  type: 'DepositFailed',
  data: { workspaceId: WS, depositId, amountNanoUsd: amount.toString(), paymentIntentId: pi, reason, code, by: 'u' },
});
export const autoReloadConfigured = (o: {
  threshold: bigint;
  amount: bigint;
  monthlyCap: bigint | null;
  enabled?: boolean;
}): AutoReloadConfigured => ({
  type: 'AutoReloadConfigured',
  data: {
    workspaceId: WS,
    enabled: o.enabled ?? true,
    thresholdNanoUsd: o.threshold.toString(),
    amountNanoUsd: o.amount.toString(),
    monthlyCapNanoUsd: o.monthlyCap === null ? null : o.monthlyCap.toString(),
    by: 'u',
  },
});
export const reloadTriggered = (reloadId: string, amount: bigint, balance: bigint): AutoReloadTriggered => ({
  type: 'AutoReloadTriggered',
  data: { workspaceId: WS, reloadId, amountNanoUsd: amount.toString(), balanceNanoUsd: balance.toString() },
});
export const reloadSucceeded = (reloadId: string, amount: bigint, pi: string): AutoReloadSucceeded => ({
  type: 'AutoReloadSucceeded',
  data: { workspaceId: WS, reloadId, amountNanoUsd: amount.toString(), paymentIntentId: pi },
});
export const reloadFailed = (
  reloadId: string,
  amount: bigint,
  pi: string | null,
  code: string,
  reason: string,
): [AutoReloadFailed, AutoReloadSuspended] => [
  { type: 'AutoReloadFailed', data: { workspaceId: WS, reloadId, amountNanoUsd: amount.toString(), paymentIntentId: pi, reason, code } },
  { type: 'AutoReloadSuspended', data: { workspaceId: WS, reloadId, reason: suspensionReason(code, reason) } },
];

/** A first deposit of 100 USD on the visa card. */
export const funded = () => [attached(), depositRequested('d0', usd(100)), depositSucceeded('d0', usd(100), 'pi_0')];

export const attach = (pm = 'pm_card_visa'): BillingCommand => ({
  type: 'AttachPaymentMethod',
  data: { workspaceId: WS, paymentMethodId: pm, brand: 'visa', last4: '4242', customerId: null, gateway: 'sandbox' },
});
export const requestDeposit = (depositId: string, amount: bigint): BillingCommand => ({
  type: 'RequestDeposit',
  data: { workspaceId: WS, depositId, amount, by: 'u', rules },
});
export const recordDepositOutcome = (depositId: string, outcome: ChargeOutcome): BillingCommand => ({
  type: 'RecordDepositOutcome',
  data: { workspaceId: WS, depositId, outcome },
});
export const configureAutoReload = (
  o: Partial<{ threshold: bigint; amount: bigint; monthlyCap: bigint | null; enabled: boolean }>,
): BillingCommand => ({
  type: 'ConfigureAutoReload',
  data: { workspaceId: WS, enabled: true, threshold: usd(5), amount: usd(10), monthlyCap: null, by: 'u', rules, ...o },
});
export const triggerReload = (reloadId: string, balance: bigint, now = '2026-03-15T12:00:00.000Z'): BillingCommand => ({
  type: 'TriggerReload',
  data: { workspaceId: WS, reloadId, balance, now },
});
export const recordReloadOutcome = (reloadId: string, outcome: ChargeOutcome): BillingCommand => ({
  type: 'RecordReloadOutcome',
  data: { workspaceId: WS, reloadId, outcome },
});
