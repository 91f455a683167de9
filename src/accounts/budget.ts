import { formatUsd, NanoUsd } from '../platform/money';

/**
 * Per-key monthly budgets. A key's spend is counted per UTC calendar month ("2026-11"), by the time
 * its TokensDebited was recorded; a budget refuses a request whose reservation, added to the
 * month's spend and the key's other open reservations, would pass it.
 */
export const budgetMonth = (iso: string): string => iso.slice(0, 7);

/** What is left of a budget before a request: never negative. */
export function budgetLeft(budget: NanoUsd, spent: NanoUsd, heldByOthers: NanoUsd): NanoUsd {
  const left = budget - spent - heldByOthers;
  return left > 0n ? left : 0n;
}

/** The 402 detail when a key's budget refuses a request. */
export function budgetRefusal(keyName: string, budget: NanoUsd, left: NanoUsd, required: NanoUsd): string {
  return (
    `Monthly budget exceeded: key "${keyName}" has a monthly budget of ${formatUsd(budget)} USD with ` +
    `${formatUsd(left)} USD left this month (UTC); this request needs up to ${formatUsd(required)} USD. ` +
    `Raise the key's monthlyBudget, lower max_tokens, or wait for the next month.`
  );
}
