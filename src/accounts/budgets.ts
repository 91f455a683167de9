import { DomainError, notFound } from '../platform/errors';
import { assertNever } from '../platform/event';
import { DEFAULT_BUDGET_PERIOD, isBudgetPeriod, type BudgetPeriod } from '../platform/budget-periods';
import type { ApiKeyBudgetChanged, ApiKeyBudgetChangedV2, MemberBudgetChanged } from './events';
import { requireAdmin, type Budget, type KeyState, type WorkspaceState } from './workspace-state';

/**
 * Spend caps per period, decided against the workspace's state (team.ts hands the budget part of
 * UpdateApiKey here, and SetMemberBudget):
 *
 *   key ──budget and/or period (any member)──▶ ApiKeyBudgetChangedV2 (nothing when unchanged)
 *   member ──SetMemberBudget (actor admin; a member, or whoever created one of the live keys)──▶ MemberBudgetChanged
 *
 * A budget sent without a period keeps the key's period (monthly when it had none); a period sent
 * without a budget changes the period of the budget the key has. A period that does not exist is
 * refused (422) before anything is appended.
 */
export interface BudgetChange {
  /** Nano-USD integer string, null to remove; absent: unchanged. */
  budgetNanoUsd?: string | null;
  /** Absent: unchanged (or monthly for a new budget). */
  period?: string;
}

export type SetMemberBudget = {
  type: 'SetMemberBudget';
  data: { userId: string; budgetNanoUsd: string | null; period?: string; by: string };
};

export type BudgetEvent = ApiKeyBudgetChanged | ApiKeyBudgetChangedV2 | MemberBudgetChanged;

const NANO = /^(0|[1-9]\d*)$/;

/** The budget a change leads to from `current`, or the 422 saying why it cannot. */
function nextBudget(current: Budget | null, change: BudgetChange, field: string): Budget | null {
  if (change.period !== undefined && !isBudgetPeriod(change.period)) {
    throw new DomainError(
      'invalid',
      `${field}Period must be one of daily, weekly, monthly (got "${String(change.period).slice(0, 40)}")`,
      `${field}Period`,
    );
  }
  const period = change.period as BudgetPeriod | undefined;
  if (change.budgetNanoUsd === null) return null;
  if (change.budgetNanoUsd === undefined) {
    if (period === undefined) return current;
    if (!current) throw new DomainError('invalid', `${field}Period needs a budget: send ${field} with it`, `${field}Period`);
    return { ...current, period };
  }
  if (!NANO.test(change.budgetNanoUsd)) throw new DomainError('invalid', `${field} must be a non-negative amount`, field);
  return { nanoUsd: change.budgetNanoUsd, period: period ?? current?.period ?? DEFAULT_BUDGET_PERIOD };
}

/** The fields every budget event carries: the budget now and the one it replaced. */
const changeFields = (next: Budget | null, current: Budget | null) => ({
  budgetNanoUsd: next?.nanoUsd ?? null,
  period: next?.period ?? null,
  previousBudgetNanoUsd: current?.nanoUsd ?? null,
  previousPeriod: current?.period ?? null,
});

const same = (a: Budget | null, b: Budget | null) =>
  a === null ? b === null : b !== null && a.nanoUsd === b.nanoUsd && a.period === b.period;

/** The event for a key's new budget, or nothing when it is unchanged. `field` names it in a 422. */
export function decideKeyBudget(
  state: WorkspaceState,
  key: KeyState,
  change: BudgetChange,
  by: string,
  field = 'budget',
): ApiKeyBudgetChangedV2[] {
  const next = nextBudget(key.budget, change, field);
  if (same(key.budget, next)) return [];
  return [
    {
      type: 'ApiKeyBudgetChangedV2',
      data: { workspaceId: state.workspaceId, keyId: key.keyId, ...changeFields(next, key.budget), by },
    },
  ];
}

/**
 * A member's budget covers every key they created in this workspace; their keys stay when they
 * leave, so the budget can still be set for whoever created a live key.
 */
export function decideMemberBudget(state: WorkspaceState, d: SetMemberBudget['data']): MemberBudgetChanged[] {
  requireAdmin(state, d.by);
  const created = [...state.keys.values()].some((k) => k.createdBy === d.userId);
  if (!state.members.has(d.userId) && !created) throw notFound('Member not found');
  const current = state.memberBudgets.get(d.userId) ?? null;
  const next = nextBudget(current, { budgetNanoUsd: d.budgetNanoUsd, ...(d.period !== undefined ? { period: d.period } : {}) }, 'budget');
  if (same(current, next)) return [];
  return [
    {
      type: 'MemberBudgetChanged',
      data: { workspaceId: state.workspaceId, userId: d.userId, ...changeFields(next, current), by: d.by },
    },
  ];
}

/** A budget event's budget; a released ApiKeyBudgetChanged is monthly. */
export function budgetOf(e: BudgetEvent): Budget | null {
  switch (e.type) {
    case 'ApiKeyBudgetChanged':
      return e.data.monthlyBudgetNanoUsd === null ? null : { nanoUsd: e.data.monthlyBudgetNanoUsd, period: DEFAULT_BUDGET_PERIOD };
    case 'ApiKeyBudgetChangedV2':
    case 'MemberBudgetChanged':
      return e.data.budgetNanoUsd === null ? null : { nanoUsd: e.data.budgetNanoUsd, period: e.data.period ?? DEFAULT_BUDGET_PERIOD };
    default:
      return assertNever(e);
  }
}

export function evolveBudget(state: WorkspaceState, e: BudgetEvent): WorkspaceState {
  const budget = budgetOf(e);
  if (e.type === 'MemberBudgetChanged') {
    const memberBudgets = new Map(state.memberBudgets);
    if (budget) memberBudgets.set(e.data.userId, budget);
    else memberBudgets.delete(e.data.userId);
    return { ...state, memberBudgets };
  }
  const key = state.keys.get(e.data.keyId);
  if (!key) return state;
  return { ...state, keys: new Map(state.keys).set(key.keyId, { ...key, budget }) };
}
