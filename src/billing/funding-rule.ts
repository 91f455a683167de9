import type { NanoUsd } from '../platform/money';

export interface Funding {
  hasPaymentMethod: boolean;
  depositedNanoUsd: NanoUsd;
  funded: boolean;
}

/**
 * The spec's rule for generating keys: a valid card on file and deposits of at least the initial
 * deposit (100 USD by default). The one place "funded" is decided, whether the facts come from the
 * billing state folded from the ledger (key creation) or from the read models (GET …/billing).
 */
export function funding(facts: { paymentMethod: object | null; deposited: NanoUsd }, initialDeposit: NanoUsd): Funding {
  const hasPaymentMethod = facts.paymentMethod !== null;
  return { hasPaymentMethod, depositedNanoUsd: facts.deposited, funded: hasPaymentMethod && facts.deposited >= initialDeposit };
}
