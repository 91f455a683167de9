import { assertNever, type EventRecord } from '../platform/event';
import type { NanoUsd } from '../platform/money';
import type { AutoReloadSucceeded, DepositSucceeded } from './events';
import type { TokensDebited } from '../inference/events';

/**
 * The money ledger as finance replays it from the event store: deposits and reloads add, debits
 * subtract, per workspace, exactly (bigint nano-USD). The balances projection must always equal
 * this fold; `tollgate ledger verify` checks that it does.
 */
export type MoneyEvent = DepositSucceeded | AutoReloadSucceeded | TokensDebited;
export const MONEY_EVENTS: ReadonlySet<string> = new Set<MoneyEvent['type']>(['DepositSucceeded', 'AutoReloadSucceeded', 'TokensDebited']);
/** Narrows a stored event to a money event. */
export const isMoney = (e: EventRecord): e is EventRecord<MoneyEvent> => MONEY_EVENTS.has(e.type);

export interface MoneyLine {
  position: bigint;
  at: string;
  workspaceId: string;
  type: 'DepositSucceeded' | 'AutoReloadSucceeded' | 'TokensDebited';
  /** depositId, reloadId or requestId. */
  ref: string;
  /** Signed: + deposits and reloads, − debits. */
  amount: NanoUsd;
  /** The workspace's balance after this line. */
  balance: NanoUsd;
  paymentIntentId?: string;
  keyId?: string;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
}

export interface WorkspaceTotals {
  balance: NanoUsd;
  deposited: NanoUsd;
  reloaded: NanoUsd;
  debited: NanoUsd;
  /** The lowest balance the workspace ever had (negative means the ledger went below zero). */
  lowest: NanoUsd;
}

const emptyTotals = (): WorkspaceTotals => ({ balance: 0n, deposited: 0n, reloaded: 0n, debited: 0n, lowest: 0n });

/** Folds money events in store order; `apply` returns the ledger line an event makes, or null. */
export class LedgerReplay {
  readonly totals = new Map<string, WorkspaceTotals>();

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
        };
        break;
      }
      default:
        return assertNever(e);
    }
    let t = this.totals.get(line.workspaceId);
    if (!t) this.totals.set(line.workspaceId, (t = emptyTotals()));
    t.balance += line.amount;
    if (line.type === 'DepositSucceeded') t.deposited += line.amount;
    else if (line.type === 'AutoReloadSucceeded') t.reloaded += line.amount;
    else t.debited -= line.amount;
    if (t.balance < t.lowest) t.lowest = t.balance;
    return { ...line, balance: t.balance };
  }

  get(workspaceId: string): WorkspaceTotals {
    return this.totals.get(workspaceId) ?? emptyTotals();
  }
}
