import type { NanoUsd } from '../../../platform/money';
import { DEFAULT_BUDGET_PERIOD, isBudgetPeriod, type BudgetPeriod } from '../../../platform/budget-periods';
import type { ReadModels } from '../../../platform/projections/read-models';
import { API_KEYS, ApiKeyListEntry, KeyRoll } from './projection';

export type { ApiKeyListEntry };

export interface ApiKeyView extends ApiKeyListEntry {
  /** Nano-USD a period, or null for none. */
  budget: NanoUsd | null;
  /** The period the budget resets by (monthly when the key has no budget). */
  budgetPeriod: BudgetPeriod;
  /** The last roll (prefix and last 4 above are then the new secret's), or null. */
  lastRoll: KeyRoll | null;
}

/** The workspace's live keys (current name, budget and secret's prefix), oldest first. */
export async function keysOf(rm: ReadModels, workspaceId: string): Promise<ApiKeyView[]> {
  const k = await rm.keys(API_KEYS);
  const res = await rm.redis
    .multi()
    .hgetall(k('ws', workspaceId))
    .hgetall(k('ws', workspaceId, 'name'))
    .hgetall(k('ws', workspaceId, 'budget'))
    .hgetall(k('rolled', workspaceId))
    .hgetall(k('ws', workspaceId, 'budget-period'))
    .exec();
  const [h, names, budgets, rolled, periods] = [0, 1, 2, 3, 4].map((i) => (res?.[i]?.[1] as Record<string, string>) ?? {});
  return Object.values(h)
    .map((v) => {
      const e = JSON.parse(v) as ApiKeyListEntry;
      const roll = rolled[e.keyId] ? (JSON.parse(rolled[e.keyId]) as KeyRoll) : null;
      return {
        ...e,
        ...(roll ? { prefix: roll.prefix, last4: roll.last4 } : {}),
        name: names[e.keyId] ?? e.name,
        budget: budgets[e.keyId] !== undefined ? BigInt(budgets[e.keyId]) : null,
        budgetPeriod: periodOf(periods[e.keyId]),
        lastRoll: roll,
      };
    })
    .sort((a, b) => a.created.localeCompare(b.created) || a.keyId.localeCompare(b.keyId));
}

const periodOf = (v: string | undefined): BudgetPeriod => (isBudgetPeriod(v) ? v : DEFAULT_BUDGET_PERIOD);
