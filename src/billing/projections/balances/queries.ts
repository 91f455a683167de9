import type { NanoUsd } from '../../../platform/money';
import { BALANCES } from './projection';
import type { Redis } from 'ioredis';
import {
  BUDGET_PERIODS,
  DEFAULT_BUDGET_PERIOD,
  isBudgetPeriod,
  periodIdsAt,
  periodWindow,
  type BudgetPeriod,
} from '../../../platform/budget-periods';
import type { Keyspace } from '../../../platform/projections/keyspace';
import type { ReadCommand, ReadModels } from '../../../platform/projections/read-models';
import { heldByKeyField, heldByMemberField, reservationKeys } from './reservation-keys';

/** The balances read model's queries: a workspace's balance, each key's spend and holds, the budgets' status. */

export interface Balance {
  /** The sum of the unexpired grants' remaining amounts at `now`: what the admission script holds against. */
  balance: NanoUsd;
  deposited: NanoUsd;
  reloaded: NanoUsd;
  /** Granted by operators; taken out by recorded expiries. */
  granted: NanoUsd;
  expired: NanoUsd;
  debited: NanoUsd;
}

/** The workspace's balance at `now` (by default the projected one, grants past expiry included until their expiry is recorded). */
export async function getBalance(rm: ReadModels, workspaceId: string, now?: Date): Promise<Balance> {
  const [found] = await rm.read(BALANCES, (k) => [['hgetall', k.ws(workspaceId)]]);
  const h = (found as Record<string, string> | null) ?? {};
  const n = (v?: string) => BigInt(v ?? '0');
  let balance = n(h.balance);
  // As the admission script (reserve.inc.lua, spendable) does: a grant past its expiry counts for nothing.
  if (now && h.expiring) {
    for (const entry of h.expiring.split(' ')) {
      const [ms, id] = [Number(entry.slice(0, 13)), entry.slice(14)];
      if (ms <= now.getTime()) balance -= n(h[`g:${id}`]);
    }
    if (balance < 0n && n(h.balance) >= 0n) balance = 0n;
  }
  return {
    balance,
    deposited: n(h.deposited),
    reloaded: n(h.reloaded),
    granted: n(h.granted),
    expired: n(h.expired),
    debited: n(h.debited),
  };
}

/**
 * Each key's spend in a period, nano-USD; 0 for a key that spent nothing. `periodId` is one id for
 * every key ("2026-11") or each key's own (its budget's period).
 */
export async function keySpend(
  rm: ReadModels,
  workspaceId: string,
  keyIds: string[],
  periodId: string | ((keyId: string) => string),
): Promise<Map<string, NanoUsd>> {
  const out = new Map<string, NanoUsd>();
  if (!keyIds.length) return out;
  const k = await rm.keys(BALANCES);
  const p = rm.redis.pipeline();
  for (const id of keyIds) p.hget(k.ws(workspaceId, 'key-spend', id), typeof periodId === 'string' ? periodId : periodId(id));
  const res = (await p.exec()) ?? [];
  keyIds.forEach((id, i) => out.set(id, BigInt((res[i]?.[1] as string | null) ?? '0')));
  return out;
}

/** What each of a workspace's keys' requests in flight hold (the =k:{keyId} sums of its holds hash), nano-USD. */
export async function keyHolds(redis: Redis, ks: Keyspace, workspaceId: string, keyIds: string[]): Promise<Map<string, NanoUsd>> {
  const out = new Map<string, NanoUsd>();
  if (!keyIds.length) return out;
  const vals = await redis.hmget(reservationKeys((...p) => ks.shared(...p), workspaceId).held, ...keyIds.map(heldByKeyField));
  keyIds.forEach((id, i) => out.set(id, BigInt(vals[i] ?? '0')));
  return out;
}

/** A member's budget across the keys they created, as the reserve script sees it now. */
export interface MemberBudgetStatus {
  budget: NanoUsd;
  period: BudgetPeriod;
  periodId: string;
  resetsAt: string;
  /** Spent by the member's keys in the current period. */
  spent: NanoUsd;
  /** Held by their requests in flight. */
  held: NanoUsd;
}

/** The members' budgets (a member without one is absent from the map) at `now`. */
export async function memberBudgets(
  rm: ReadModels,
  ks: Keyspace,
  workspaceId: string,
  userIds: string[],
  now: Date,
): Promise<Map<string, MemberBudgetStatus>> {
  const out = new Map<string, MemberBudgetStatus>();
  if (!userIds.length) return out;
  const k = await rm.keys(BALANCES);
  const held = reservationKeys((...p) => ks.shared(...p), workspaceId).held;
  const p = rm.redis.pipeline();
  for (const u of userIds)
    p.get(k.ws(workspaceId, 'member-budget', u))
      .get(k.ws(workspaceId, 'member-budget-period', u))
      .hgetall(k.ws(workspaceId, 'member-spend', u))
      .hget(held, heldByMemberField(u));
  const res = ((await p.exec()) ?? []).map((r) => r[1]);
  userIds.forEach((u, i) => {
    const [budget, period, spend, hold] = res.slice(i * 4, i * 4 + 4) as [
      string | null,
      string | null,
      Record<string, string>,
      string | null,
    ];
    if (budget === null) return;
    const p = isBudgetPeriod(period) ? period : DEFAULT_BUDGET_PERIOD;
    const w = periodWindow(p, now);
    out.set(u, {
      budget: BigInt(budget),
      period: p,
      periodId: w.id,
      resetsAt: w.resetsAt.toISOString(),
      spent: BigInt(spend?.[w.id] ?? '0'),
      held: BigInt(hold ?? '0'),
    });
  });
  return out;
}

/**
 * A key's budget and its spend in the budget's period that `at` falls in; null for a key without a
 * budget. One trip; of the key's spend it reads only the periods `at` falls in (the hash keeps every
 * past day, week and month, and this runs for every debit).
 */
export async function keyBudgetAt(
  rm: ReadModels,
  workspaceId: string,
  keyId: string,
  at: Date,
): Promise<{ budget: NanoUsd; period: BudgetPeriod; spent: NanoUsd; window: ReturnType<typeof periodWindow> } | null> {
  const ids = periodIdsAt(at);
  const [budget, period, ...spends] = (await rm.read(
    BALANCES,
    (k) => [
      ['get', k.ws(workspaceId, 'key-budget', keyId)],
      ['get', k.ws(workspaceId, 'key-budget-period', keyId)],
      ...BUDGET_PERIODS.map((p): ReadCommand => ['hget', k.ws(workspaceId, 'key-spend', keyId), ids[p]]),
      // A key without a budget (most keys) costs its budget's GET alone: this runs for every debit.
    ],
    { ifFirst: true },
  )) as Array<string | null>;
  if (budget === null) return null;
  const p = isBudgetPeriod(period) ? period : DEFAULT_BUDGET_PERIOD;
  const window = periodWindow(p, at);
  return { budget: BigInt(budget), period: p, spent: BigInt(spends[BUDGET_PERIODS.indexOf(p)] ?? '0'), window };
}
