import type { NanoUsd } from '../../../platform/money';
import { DEFAULT_BUDGET_PERIOD, isBudgetPeriod, type BudgetPeriod } from '../../../platform/budget-periods';

/** The budget that refused a request the balance covered: the key's own, or its creator's member budget. */
export interface BudgetRefused {
  scope: 'key' | 'member';
  budget: NanoUsd;
  period: BudgetPeriod;
  /** Spent in the budget's current period (debits the projector applied). */
  spent: NanoUsd;
  /** Held by the key's (or member's) other requests in flight. */
  heldByOthers: NanoUsd;
  /** The member, for a member budget. */
  userId?: string;
}

/** The layer with the least left once a request is held (balance, key budget, member budget), and what is left of it. */
export interface TightestLeft {
  scope: 'balance' | 'key' | 'member';
  remaining: NanoUsd;
}

export type ReserveResult =
  | { ok: true; balance: NanoUsd; held: NanoUsd; tightest?: TightestLeft }
  | { ok: false; balance: NanoUsd; held: NanoUsd; available: NanoUsd; budget?: undefined }
  /** The balance covered it, a budget did not. */
  | { ok: false; balance: NanoUsd; held: NanoUsd; available: NanoUsd; budget: BudgetRefused };

/** What reserve() (./reserve.inc.lua) returns, as the script's reply. */
export type ReserveReply = [number, string, string, string?, string?, string?, string?, string?];

export function reserveResultOf([ok, balance, held, budget, spent, others, period, userId]: ReserveReply): ReserveResult {
  const b = BigInt(balance);
  const h = BigInt(held);
  const verdict = Number(ok);
  if (verdict === 1) {
    // On success the reply's tail is keyBudget, keyUsed, memberBudget, memberUsed ('' without that budget).
    let tightest: TightestLeft = { scope: 'balance', remaining: b - h };
    for (const [scope, limit, used] of [
      ['key', budget, spent],
      ['member', others, period],
    ] as const) {
      if (!limit) continue;
      const left = BigInt(limit) - BigInt(used ?? '0');
      if (left < tightest.remaining) tightest = { scope, remaining: left };
    }
    return { ok: true, balance: b, held: h, tightest: { ...tightest, remaining: tightest.remaining > 0n ? tightest.remaining : 0n } };
  }
  if (verdict === 2 || verdict === 3) {
    const refused: BudgetRefused = {
      scope: verdict === 2 ? 'key' : 'member',
      budget: BigInt(budget!),
      period: isBudgetPeriod(period) ? period : DEFAULT_BUDGET_PERIOD,
      spent: BigInt(spent!),
      heldByOthers: BigInt(others ?? '0'),
      ...(verdict === 3 && userId ? { userId } : {}),
    };
    return { ok: false, balance: b, held: h, available: b - h, budget: refused };
  }
  return { ok: false, balance: b, held: h, available: b - h };
}
