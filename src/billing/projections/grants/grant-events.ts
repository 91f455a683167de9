import type { AutoReloadSucceeded, CreditGranted, DepositSucceeded } from '../../events';
import { type Grant, type GrantCategory, PAID_PRIORITY } from '../../grants';
import { luaInclude } from '../../../platform/redis-scripts';

/** The grant book's Lua functions (./grant-book.inc.lua), for the balances and the ledger projections. */
export const grantBookLua = luaInclude('billing/projections/grants/grant-book.inc.lua');

export type GrantEvent = DepositSucceeded | AutoReloadSucceeded | CreditGranted;
export const GRANT_EVENTS: ReadonlySet<string> = new Set<GrantEvent['type']>(['DepositSucceeded', 'AutoReloadSucceeded', 'CreditGranted']);

/** The grant an event makes: deposits and reloads are paid grants that never expire, named by their deposit or reload id. */
export function grantOf(e: GrantEvent & { position: bigint; created: string }): Omit<Grant, 'remaining' | 'expired'> {
  const base = { amount: BigInt(e.data.amountNanoUsd), position: e.position, at: e.created };
  switch (e.type) {
    case 'DepositSucceeded':
      return { ...base, grantId: e.data.depositId, category: 'paid', priority: PAID_PRIORITY, expiresAt: null };
    case 'AutoReloadSucceeded':
      return { ...base, grantId: e.data.reloadId, category: 'paid', priority: PAID_PRIORITY, expiresAt: null };
    case 'CreditGranted':
      return { ...base, grantId: e.data.grantId, category: e.data.category, priority: e.data.priority, expiresAt: e.data.expiresAt };
  }
}

/** What the grants list shows of a grant that does not change (what it has left is the book's). */
export interface GrantMeta {
  grantId: string;
  category: GrantCategory;
  amountNanoUsd: string;
  priority: number;
  expiresAt: string | null;
  grantedAt: string;
  /** deposit, reload or operator */
  source: 'deposit' | 'reload' | 'operator';
  note?: string;
}

export function grantMeta(g: Omit<Grant, 'remaining' | 'expired'>, e?: GrantEvent): GrantMeta {
  const source = e?.type === 'DepositSucceeded' ? 'deposit' : e?.type === 'AutoReloadSucceeded' ? 'reload' : 'operator';
  return {
    grantId: g.grantId,
    category: g.category,
    amountNanoUsd: g.amount.toString(),
    priority: g.priority,
    expiresAt: g.expiresAt,
    grantedAt: g.at,
    source,
    ...(e?.type === 'CreditGranted' ? { note: e.data.note } : {}),
  };
}

/** A grant in the expiry worker's to-do (a sorted set shared by all workspaces). */
export const expiryMember = (workspaceId: string, grantId: string) => `${workspaceId} ${grantId}`;
