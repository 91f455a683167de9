import type { NanoUsd } from '../platform/money';
import type { AutoReloadSucceeded, CreditGranted, CreditNoteIssued, DepositSucceeded } from './events';

/**
 * Credit grants and their drawdown, pure: what the ledger replay folds, and what the two Lua
 * copies of the book (projections/grant-book.inc.lua, in the balances and the ledger read models)
 * must agree with. Every credit is a grant: deposits and reloads are `paid` grants that never
 * expire (their events are unchanged: DepositSucceeded, AutoReloadSucceeded), operators grant
 * `promotional` credit (CreditGranted) and issue credit notes against a request (CreditNoteIssued,
 * category `credit_note`, never expiring).
 *
 * A debit draws from the grants in the draw order: priority (lower first), then the soonest expiry
 * (never-expiring last), then the oldest (store position). The split depends only on the log: the
 * grants and debits before it, in store order, and its own time. A debit first draws on grants not
 * yet expired at its time; only what those cannot cover is drawn from grants past their expiry
 * whose expiry is not recorded yet — the holds admitted before a grant expired (see BILLING.md,
 * "A grant that expires under a hold").
 */

export type GrantCategory = 'paid' | 'promotional' | 'credit_note';

/** Deposits and reloads draw in the middle: operators may put credit before (1–49) or after (51–100) them. */
export const PAID_PRIORITY = 50;
export const MIN_PRIORITY = 1;
export const MAX_PRIORITY = 100;
export const DEFAULT_GRANT_PRIORITY = 10;
/** Credit notes draw before paid credit: what a workspace paid stays refundable the longest. */
export const CREDIT_NOTE_PRIORITY = 40;
/** Expiry of a grant that never expires, in the draw-order key (ms; 13 digits like every real one). */
export const NEVER_MS = 9_999_999_999_999;

export interface Grant {
  grantId: string;
  category: GrantCategory;
  amount: NanoUsd;
  remaining: NanoUsd;
  priority: number;
  expiresAt: string | null;
  /** Store position of the event that made it: "oldest first". */
  position: bigint;
  at: string;
  /** Set once its expiry is recorded. */
  expired: NanoUsd | null;
}

export interface Draw {
  grantId: string;
  amount: NanoUsd;
}

/**
 * The draw-order key of a grant, fixed width so that byte order is draw order (the Lua copy keeps
 * the same members in a sorted set read with ZRANGE): `ppp|eeeeeeeeeeeee|<20-digit position>|id`.
 */
export function drawOrderKey(g: Pick<Grant, 'priority' | 'expiresAt' | 'position' | 'grantId'>): string {
  const exp = g.expiresAt === null ? NEVER_MS : Date.parse(g.expiresAt);
  return `${String(g.priority).padStart(3, '0')}|${String(exp).padStart(13, '0')}|${g.position.toString().padStart(20, '0')}|${g.grantId}`;
}

/** One workspace's grants. */
export class GrantBook {
  readonly grants = new Map<string, Grant>();
  /** Draw-order keys of grants with something left, kept sorted. */
  private order: string[] = [];

  add(g: Omit<Grant, 'remaining' | 'expired'>): void {
    if (this.grants.has(g.grantId)) return;
    this.grants.set(g.grantId, { ...g, remaining: g.amount, expired: null });
    if (g.amount > 0n) {
      this.order.push(drawOrderKey(g));
      this.order.sort();
    }
  }

  /** Draws `amount` at `at` (the debit's time); `uncovered` is what no grant could pay (0 unless the ledger went below zero). */
  draw(amount: NanoUsd, at: string): { draws: Draw[]; uncovered: NanoUsd } {
    let left = amount;
    const draws: Draw[] = [];
    const atMs = Date.parse(at);
    for (const pastExpiry of [false, true]) {
      for (const key of [...this.order]) {
        if (left <= 0n) break;
        const g = this.grants.get(key.slice(39))!;
        const expMs = g.expiresAt === null ? NEVER_MS : Date.parse(g.expiresAt);
        if (expMs <= atMs !== pastExpiry) continue;
        const take = g.remaining < left ? g.remaining : left;
        g.remaining -= take;
        left -= take;
        draws.push({ grantId: g.grantId, amount: take });
        if (g.remaining === 0n) this.order = this.order.filter((k) => k !== key);
      }
    }
    return { draws, uncovered: left };
  }

  /** Records the grant's expiry: what it had left (0 for an unknown or already expired grant). */
  expire(grantId: string): NanoUsd {
    const g = this.grants.get(grantId);
    if (!g || g.expired !== null) return 0n;
    const left = g.remaining;
    g.expired = left;
    g.remaining = 0n;
    this.order = this.order.filter((k) => k.slice(39) !== grantId);
    return left;
  }

  /** The balance at `at`: the remaining amounts of the grants not expired by then. */
  spendable(at: string): NanoUsd {
    const ms = Date.parse(at);
    let sum = 0n;
    for (const g of this.grants.values()) if (g.expiresAt === null || Date.parse(g.expiresAt) > ms) sum += g.remaining;
    return sum;
  }
}

export type GrantEvent = DepositSucceeded | AutoReloadSucceeded | CreditGranted | CreditNoteIssued;
export const GRANT_EVENTS: ReadonlySet<string> = new Set<GrantEvent['type']>([
  'DepositSucceeded',
  'AutoReloadSucceeded',
  'CreditGranted',
  'CreditNoteIssued',
]);

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
    case 'CreditNoteIssued':
      return { ...base, grantId: e.data.creditNoteId, category: 'credit_note', priority: CREDIT_NOTE_PRIORITY, expiresAt: null };
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
  /** A credit note: the request it credits (its reason is the note). */
  requestId?: string;
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
    ...(e?.type === 'CreditNoteIssued' ? { note: e.data.reason, requestId: e.data.requestId } : {}),
  };
}

/** A grant in the expiry worker's to-do (a sorted set shared by all workspaces). */
export const expiryMember = (workspaceId: string, grantId: string) => `${workspaceId} ${grantId}`;
