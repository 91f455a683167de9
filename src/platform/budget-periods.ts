/**
 * The periods a spend budget resets by, all in UTC: a day (00:00), a week (Monday 00:00) or a
 * calendar month (the 1st, 00:00). Every spend counter is keyed by its period's id, so a new
 * period starts from zero without anything being reset:
 *
 *   daily   "2026-11-25"   the date
 *   weekly  "2026-W48"     the ISO 8601 week (weeks start on Monday; the ISO week-year)
 *   monthly "2026-11"      the month (the id the month-to-date counters always had)
 *
 * Accounts (budgets), billing (the spend counters) and inference (the admission script's
 * arguments) must agree on these ids to the character: this is the one place that makes them.
 */
export const BUDGET_PERIODS = ['daily', 'weekly', 'monthly'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** What a budget without a period (every budget set before periods existed) means. */
export const DEFAULT_BUDGET_PERIOD: BudgetPeriod = 'monthly';

export const isBudgetPeriod = (v: unknown): v is BudgetPeriod => typeof v === 'string' && (BUDGET_PERIODS as readonly string[]).includes(v);

/** The id of each period `at` falls in. */
export type PeriodIds = Record<BudgetPeriod, string>;

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const DAY_MS = 86_400_000;

/** Midnight UTC of the Monday of `at`'s week. */
function mondayOf(at: Date): Date {
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  const sinceMonday = (new Date(day).getUTCDay() + 6) % 7;
  return new Date(day - sinceMonday * DAY_MS);
}

/** ISO 8601 week id: the week belongs to the year of its Thursday. */
function isoWeekId(at: Date): string {
  const thursday = new Date(mondayOf(at).getTime() + 3 * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * DAY_MS)) + 1;
  return `${year}-W${pad(week)}`;
}

export function periodIdsAt(at: Date): PeriodIds {
  const date = `${at.getUTCFullYear()}-${pad(at.getUTCMonth() + 1)}-${pad(at.getUTCDate())}`;
  return { daily: date, weekly: isoWeekId(at), monthly: date.slice(0, 7) };
}

/** The period `at` falls in: its id, its first instant and the instant it resets (the next one's start). */
export function periodWindow(period: BudgetPeriod, at: Date): { id: string; start: Date; resetsAt: Date } {
  const id = periodIdsAt(at)[period];
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  switch (period) {
    case 'daily': {
      const start = new Date(Date.UTC(y, m, at.getUTCDate()));
      return { id, start, resetsAt: new Date(start.getTime() + DAY_MS) };
    }
    case 'weekly': {
      const start = mondayOf(at);
      return { id, start, resetsAt: new Date(start.getTime() + 7 * DAY_MS) };
    }
    case 'monthly':
      return { id, start: new Date(Date.UTC(y, m, 1)), resetsAt: new Date(Date.UTC(y, m + 1, 1)) };
  }
}
