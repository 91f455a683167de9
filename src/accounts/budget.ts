import { formatUsd, NanoUsd } from '../platform/money';
import type { BudgetPeriod } from '../platform/budget-periods';

/**
 * Budgets on the read side: what is left, and the 402 a refused request gets. A budget refuses a
 * request whose reservation, added to the period's spend and the other open reservations it counts
 * (the key's, or all of its creator's keys' for a member budget), would pass it. Decisions: ./budgets.ts.
 */

/** What is left of a budget before a request: never negative. */
export function budgetLeft(budget: NanoUsd, spent: NanoUsd, heldByOthers: NanoUsd): NanoUsd {
  const left = budget - spent - heldByOthers;
  return left > 0n ? left : 0n;
}

const PERIOD_WORD: Record<BudgetPeriod, string> = { daily: 'daily', weekly: 'weekly', monthly: 'monthly' };
const PERIOD_NOUN: Record<BudgetPeriod, string> = { daily: 'today', weekly: 'this week', monthly: 'this month' };

/** Which budget refused a request, as the 402 says it (its structured twin: BudgetRefusalFields). */
export interface BudgetRefusalFacts {
  scope: 'key' | 'member';
  keyName: string;
  /** The member's name or id, for a member budget. */
  member?: string;
  budget: NanoUsd;
  period: BudgetPeriod;
  left: NanoUsd;
  required: NanoUsd;
  /** ISO UTC: when the period ends and the budget starts again from zero. */
  resetsAt: string;
}

/** The 402 detail when a budget refuses a request. */
export function budgetRefusal(f: BudgetRefusalFacts): string {
  const whose = f.scope === 'key' ? `key "${f.keyName}"` : `the member budget of ${f.member ?? 'the key\'s creator'} (all keys they created, key "${f.keyName}" among them)`;
  const raise = f.scope === 'key' ? "Raise the key's budget" : 'Ask an admin to raise the member budget';
  return (
    `${f.scope === 'key' ? 'Key' : 'Member'} budget exceeded: ${whose} has a ${PERIOD_WORD[f.period]} budget of ${formatUsd(f.budget)} USD with ` +
    `${formatUsd(f.left)} USD left ${PERIOD_NOUN[f.period]} (UTC); this request needs up to ${formatUsd(f.required)} USD. ` +
    `The budget resets at ${f.resetsAt}. ${raise}, lower max_tokens, or wait until then.`
  );
}
