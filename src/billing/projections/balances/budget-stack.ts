import type { Redis } from 'ioredis';
import type { BudgetPeriod } from '../../../platform/budget-periods';
import type { NanoUsd } from '../../../platform/money';
import type { Keyspace } from '../../../platform/projections/keyspace';
import type { ReadModels } from '../../../platform/projections/read-models';
import { getBalance, keyBudgetAt, memberBudgets } from './queries';
import { HELD_TOTAL, heldByKeyField, reservationKeys } from './reservation-keys';

/**
 * Every layer that admits or refuses a key's next request, in the order the reserve script checks
 * them (./reserve.inc.lua): the workspace's balance, the key's budget, its creator's member budget.
 * A budget layer is listed only when that budget is set. Read-only: what GET …/keys/{id}/budgets shows.
 */
export interface BudgetLayer {
  scope: 'balance' | 'key' | 'member';
  /** The balance itself for the balance layer; the budget for the others. */
  limit: NanoUsd;
  period: BudgetPeriod | null;
  /** Spent in the budget's current period (null for the balance: spending is what lowered it). */
  spent: NanoUsd | null;
  /** Held by requests in flight that count against this layer. */
  held: NanoUsd;
  /** What the next request can still hold: never negative. */
  remaining: NanoUsd;
  resetsAt: string | null;
  /** The member, for the member layer. */
  userId?: string;
}

const left = (n: NanoUsd): NanoUsd => (n > 0n ? n : 0n);

export async function budgetStack(
  d: { readModels: ReadModels; redis: Redis; ks: Keyspace },
  k: { workspaceId: string; keyId: string; createdBy: string },
  now: Date,
): Promise<BudgetLayer[]> {
  const holds = reservationKeys((...p) => d.ks.shared(...p), k.workspaceId).held;
  const [balance, [held, keyHeld], keyBudget, members] = await Promise.all([
    getBalance(d.readModels, k.workspaceId),
    d.redis.hmget(holds, HELD_TOTAL, heldByKeyField(k.keyId)),
    keyBudgetAt(d.readModels, k.workspaceId, k.keyId, now),
    memberBudgets(d.readModels, d.ks, k.workspaceId, [k.createdBy], now),
  ]);
  const wsHeld = BigInt(held ?? '0');
  const layers: BudgetLayer[] = [
    {
      scope: 'balance',
      limit: balance.balance,
      period: null,
      spent: null,
      held: wsHeld,
      remaining: left(balance.balance - wsHeld),
      resetsAt: null,
    },
  ];
  if (keyBudget) {
    const h = BigInt(keyHeld ?? '0');
    layers.push({
      scope: 'key',
      limit: keyBudget.budget,
      period: keyBudget.period,
      spent: keyBudget.spent,
      held: h,
      remaining: left(keyBudget.budget - keyBudget.spent - h),
      resetsAt: keyBudget.window.resetsAt.toISOString(),
    });
  }
  const m = members.get(k.createdBy);
  if (m)
    layers.push({
      scope: 'member',
      limit: m.budget,
      period: m.period,
      spent: m.spent,
      held: m.held,
      remaining: left(m.budget - m.spent - m.held),
      resetsAt: m.resetsAt,
      userId: k.createdBy,
    });
  return layers;
}
