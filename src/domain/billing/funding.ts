import type { RecordedEvent } from '../../eventstore/port';
import type { DepositSucceeded } from './events';
import type { NanoUsd } from '../money';

export interface Funding {
  hasPaymentMethod: boolean;
  depositedNanoUsd: NanoUsd;
  funded: boolean;
}

/**
 * The spec's rule for generating keys: a valid card on file and deposits of at least the initial
 * deposit (100 USD by default). Folded from the workspace's billing stream.
 */
export function funding(billingEvents: Pick<RecordedEvent, 'type' | 'data'>[], initialDeposit: NanoUsd): Funding {
  let hasPaymentMethod = false;
  let deposited = 0n;
  for (const e of billingEvents) {
    if (e.type === 'PaymentMethodAttached') hasPaymentMethod = true;
    else if (e.type === 'DepositSucceeded') deposited += BigInt((e.data as DepositSucceeded['data']).amountNanoUsd);
  }
  return { hasPaymentMethod, depositedNanoUsd: deposited, funded: hasPaymentMethod && deposited >= initialDeposit };
}
