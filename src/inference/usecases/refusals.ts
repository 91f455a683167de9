import { budgetLeft, budgetRefusal, type KeyRecord } from '../../accounts';
import type { ReserveResult } from '../../billing';
import { DomainError } from '../../platform/errors';
import { formatUsd, NanoUsd } from '../../platform/money';

/** The 402 for a reservation that was refused (balance or the key's budget), or null if it was held. */
export function paymentRefusal(key: KeyRecord, reserved: NanoUsd, held: ReserveResult): DomainError | null {
  if (held.ok) return null;
  if (held.budget) {
    const b = held.budget;
    return new DomainError('payment_required', budgetRefusal(key.name, b.budget, budgetLeft(b.budget, b.spent, b.heldByOthers), reserved));
  }
  const available = held.available > 0n ? held.available : 0n;
  return new DomainError('payment_required', `Insufficient balance: ${formatUsd(available)} USD available, ${formatUsd(reserved)} USD required`);
}

/** Redis (or any infrastructure) failure while reserving → unavailable (503), never a 500. */
export async function unavailableOnFailure<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof DomainError) throw err;
    throw new DomainError('unavailable', 'Service temporarily unavailable: balances cannot be read');
  }
}
