import { assertNever, type EventRecord } from '../platform/event';
import type { NanoUsd } from '../platform/money';
import type { AutoReloadSucceeded, CreditExpired, CreditGranted, CreditNoteIssued, DepositSucceeded } from './events';
import { type Draw, GrantBook, grantOf } from './grants';
import type { TokensDebited } from '../inference/events';

/**
 * The money ledger as finance replays it from the event store: deposits, reloads and granted credit
 * add, debits and expiries subtract, per workspace, exactly (bigint nano-USD), and each debit's
 * split over the grants (./grants.ts). The balances projection must always equal
 * this fold; `tollgate ledger verify` checks that it does.
 */
export type MoneyEvent = DepositSucceeded | AutoReloadSucceeded | CreditGranted | CreditNoteIssued | CreditExpired | TokensDebited;
export const MONEY_EVENTS: ReadonlySet<string> = new Set<MoneyEvent['type']>([
  'DepositSucceeded',
  'AutoReloadSucceeded',
  'CreditGranted',
  'CreditNoteIssued',
  'CreditExpired',
  'TokensDebited',
]);
/** Narrows a stored event to a money event. */
export const isMoney = (e: EventRecord): e is EventRecord<MoneyEvent> => MONEY_EVENTS.has(e.type);

export interface MoneyLine {
  position: bigint;
  at: string;
  workspaceId: string;
  type: MoneyEvent['type'];
  /** depositId, reloadId, grantId or requestId. */
  ref: string;
  /** Signed: + deposits, reloads and grants, − debits and expiries. */
  amount: NanoUsd;
  /** The workspace's balance after this line. */
  balance: NanoUsd;
  paymentIntentId?: string;
  keyId?: string;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  /** CreditGranted and CreditNoteIssued: its category; the grants a debit drew from (grants.ts). */
  category?: string;
  /** CreditNoteIssued: the request it credits and why. */
  requestId?: string;
  reason?: string;
  expiresAt?: string | null;
  drawn?: Draw[];
}

export interface WorkspaceTotals {
  balance: NanoUsd;
  deposited: NanoUsd;
  reloaded: NanoUsd;
  /** Granted by operators (CreditGranted, and credit notes: CreditNoteIssued), and taken out at expiry (CreditExpired). */
  granted: NanoUsd;
  expired: NanoUsd;
  debited: NanoUsd;
  /** The lowest balance the workspace ever had (negative means the ledger went below zero). */
  lowest: NanoUsd;
}

const emptyTotals = (): WorkspaceTotals => ({
  balance: 0n,
  deposited: 0n,
  reloaded: 0n,
  granted: 0n,
  expired: 0n,
  debited: 0n,
  lowest: 0n,
});

/** Folds money events in store order; `apply` returns the ledger line an event makes, or null. */
export class LedgerReplay {
  readonly totals = new Map<string, WorkspaceTotals>();
  /** Each workspace's grants, drawn down as the projections' Lua books draw them. */
  readonly books = new Map<string, GrantBook>();

  book(workspaceId: string): GrantBook {
    let b = this.books.get(workspaceId);
    if (!b) this.books.set(workspaceId, (b = new GrantBook()));
    return b;
  }

  apply(e: EventRecord): MoneyLine | null {
    if (!isMoney(e)) return null;
    const base = { position: e.position, at: e.created };
    let line: Omit<MoneyLine, 'balance'>;
    switch (e.type) {
      case 'DepositSucceeded': {
        const d = e.data;
        line = {
          ...base,
          workspaceId: d.workspaceId,
          type: 'DepositSucceeded',
          ref: d.depositId,
          amount: BigInt(d.amountNanoUsd),
          paymentIntentId: d.paymentIntentId,
        };
        break;
      }
      case 'AutoReloadSucceeded': {
        const d = e.data;
        line = {
          ...base,
          workspaceId: d.workspaceId,
          type: 'AutoReloadSucceeded',
          ref: d.reloadId,
          amount: BigInt(d.amountNanoUsd),
          paymentIntentId: d.paymentIntentId,
        };
        break;
      }
      case 'CreditGranted': {
        const d = e.data;
        line = {
          ...base,
          workspaceId: d.workspaceId,
          type: 'CreditGranted',
          ref: d.grantId,
          amount: BigInt(d.amountNanoUsd),
          category: d.category,
          expiresAt: d.expiresAt,
        };
        break;
      }
      case 'CreditNoteIssued': {
        const d = e.data;
        line = {
          ...base,
          workspaceId: d.workspaceId,
          type: 'CreditNoteIssued',
          ref: d.creditNoteId,
          amount: BigInt(d.amountNanoUsd),
          category: 'credit_note',
          expiresAt: null,
          requestId: d.requestId,
          reason: d.reason,
        };
        break;
      }
      case 'CreditExpired': {
        const d = e.data;
        const left = this.book(d.workspaceId).expire(d.grantId);
        line = { ...base, workspaceId: d.workspaceId, type: 'CreditExpired', ref: d.grantId, amount: -left };
        break;
      }
      case 'TokensDebited': {
        const d = e.data;
        line = {
          ...base,
          workspaceId: d.workspaceId,
          type: 'TokensDebited',
          ref: d.requestId,
          amount: -BigInt(d.amountNanoUsd),
          keyId: d.keyId,
          model: d.config,
          inputTokens: d.inputTokens,
          outputTokens: d.outputTokens,
          drawn: this.book(d.workspaceId).draw(BigInt(d.amountNanoUsd), e.created).draws,
        };
        break;
      }
      default:
        return assertNever(e);
    }
    if (e.type === 'DepositSucceeded' || e.type === 'AutoReloadSucceeded' || e.type === 'CreditGranted' || e.type === 'CreditNoteIssued')
      this.book(line.workspaceId).add(grantOf(e));
    let t = this.totals.get(line.workspaceId);
    if (!t) this.totals.set(line.workspaceId, (t = emptyTotals()));
    t.balance += line.amount;
    if (line.type === 'DepositSucceeded') t.deposited += line.amount;
    else if (line.type === 'AutoReloadSucceeded') t.reloaded += line.amount;
    else if (line.type === 'CreditGranted' || line.type === 'CreditNoteIssued') t.granted += line.amount;
    else if (line.type === 'CreditExpired') t.expired -= line.amount;
    else t.debited -= line.amount;
    if (t.balance < t.lowest) t.lowest = t.balance;
    return { ...line, balance: t.balance };
  }

  get(workspaceId: string): WorkspaceTotals {
    return this.totals.get(workspaceId) ?? emptyTotals();
  }
}
