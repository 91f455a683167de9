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

const PERIOD_WORD: Record<BudgetPeriod, string> = { daily: 'Daily', weekly: 'Weekly', monthly: 'Monthly' };
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

/**
 * The 402 detail when a budget refuses a request. It starts as it did before periods ("Monthly
 * budget exceeded: key …"), so clients that read it keep working; the period and the member budget
 * each have their own words.
 */
export function budgetRefusal(f: BudgetRefusalFacts): string {
  const word = PERIOD_WORD[f.period];
  const whose =
    f.scope === 'key' ? `key "${f.keyName}"` : `${f.member ?? "the key's creator"} (every key they created, key "${f.keyName}" among them)`;
  const raise = f.scope === 'key' ? "Raise the key's budget" : "Ask an admin to raise the member's budget";
  return (
    `${word} ${f.scope === 'member' ? 'member ' : ''}budget exceeded: ${whose} has a ${word.toLowerCase()} budget of ${formatUsd(f.budget)} USD with ` +
    `${formatUsd(f.left)} USD left ${PERIOD_NOUN[f.period]} (UTC); this request needs up to ${formatUsd(f.required)} USD. ` +
    `It resets at ${f.resetsAt}. ${raise}, lower max_tokens, or wait until then.`
  );
}
