import { budgetLeft, budgetRefusal, type KeyRecord } from '../../accounts';
import type { ReserveResult } from '../../billing';
import { periodWindow } from '../../platform/budget-periods';
import { DomainError, withFields } from '../../platform/errors';
import { formatUsd, NanoUsd } from '../../platform/money';

/**
 * The 402 for a reservation that was refused (balance, the key's budget or its creator's member
 * budget), or null if it was held. A budget refusal says which budget fired, what is left and when
 * it resets, in the detail and as a `budget` object beside it.
 */
export function paymentRefusal(key: KeyRecord, reserved: NanoUsd, held: ReserveResult, now: Date): DomainError | null {
  if (held.ok) return null;
  if (held.budget) {
    const b = held.budget;
    const left = budgetLeft(b.budget, b.spent, b.heldByOthers);
    const resetsAt = periodWindow(b.period, now).resetsAt.toISOString();
    const detail = budgetRefusal({
      scope: b.scope,
      keyName: key.name,
      ...(b.userId ? { member: `user ${b.userId}` } : {}),
      budget: b.budget,
      period: b.period,
      left,
      required: reserved,
      resetsAt,
    });
    return withFields(new DomainError('payment_required', detail), {
      budget: {
        scope: b.scope,
        keyId: key.keyId,
        userId: b.userId ?? null,
        period: b.period,
        limit: formatUsd(b.budget),
        spent: formatUsd(b.spent),
        held: formatUsd(b.heldByOthers),
        remaining: formatUsd(left),
        required: formatUsd(reserved),
        resetsAt,
      },
    });
  }
  const available = held.available > 0n ? held.available : 0n;
  return new DomainError(
    'payment_required',
    `Insufficient balance: ${formatUsd(available)} USD available, ${formatUsd(reserved)} USD required`,
  );
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
