import { createHash } from 'node:crypto';
import { formatUsd, type NanoUsd } from '../platform/money';
import type { MoneyLine } from './ledger';

/**
 * A monthly statement (UTC calendar month) built from a workspace's money lines, whichever source
 * they come from: the ledger read model (the API) or a replay of the event store (`tollgate ledger
 * statement --month`). It balances by construction: the opening balance is the sum of every line
 * before the month, the closing balance is opening + deposits + reloads + grants − debits −
 * expiries, and each line falls in
 * exactly one month by its time, so a month's closing is the next month's opening.
 */
export type StatementLineInput = Pick<
  MoneyLine,
  'at' | 'type' | 'ref' | 'amount' | 'paymentIntentId' | 'keyId' | 'model' | 'inputTokens' | 'outputTokens'
> & {
  /** The event's global position (a bigint, or its decimal string as the read model keeps it). */
  position: bigint | string;
};

/**
 * A digest over the month's inference receipts, so a receipt missing from (or altered in) a set
 * that claims to be the month's shows: SHA-256 (hex) of one line per TokensDebited of the month in
 * ledger order, each `position requestId keyId inputTokens outputTokens cost` separated by tabs and
 * ended by a newline: the receipts' `debit.position`, `requestId`, `key.keyId`, `inputTokens`,
 * `outputTokens` and `cost`, for the receipts whose `debit.at` falls in the month.
 */
export interface ReceiptsDigest {
  algorithm: 'sha256';
  count: number;
  value: string;
}

export function receiptsDigestLine(r: {
  position: string;
  requestId: string;
  keyId: string;
  inputTokens: number;
  outputTokens: number;
  cost: string;
}): string {
  return `${r.position}\t${r.requestId}\t${r.keyId}\t${r.inputTokens}\t${r.outputTokens}\t${r.cost}\n`;
}

/** The digest of receipt lines (./receiptsDigestLine), sorted here by ledger position. */
export function receiptsDigestOf(lines: Array<{ position: bigint; line: string }>): ReceiptsDigest {
  const h = createHash('sha256');
  for (const l of [...lines].sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0))) h.update(l.line);
  return { algorithm: 'sha256', count: lines.length, value: h.digest('hex') };
}

/** A grant's expiry recorded in the month: what it took out of the balance (positive). */
export interface StatementExpiry {
  at: string;
  /** The grantId. */
  ref: string;
  amount: NanoUsd;
}

export interface StatementCredit {
  at: string;
  kind: 'deposit' | 'reload' | 'grant';
  /** depositId, reloadId or grantId. */
  ref: string;
  /** The payment provider's reference (Stripe PaymentIntent id). */
  paymentReference: string | null;
  amount: NanoUsd;
}

export interface StatementUsage {
  keyId: string;
  config: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cost: NanoUsd;
}

export interface MonthlyStatement {
  workspaceId: string;
  /** YYYY-MM */
  month: string;
  periodStart: string;
  periodEnd: string;
  opening: NanoUsd;
  credits: StatementCredit[];
  expiries: StatementExpiry[];
  usage: StatementUsage[];
  deposited: NanoUsd;
  reloaded: NanoUsd;
  /** Promotional credit granted in the month, and what expiries took out of it. */
  granted: NanoUsd;
  expired: NanoUsd;
  debited: NanoUsd;
  closing: NanoUsd;
  receipts: ReceiptsDigest;
}

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** The UTC month `YYYY-MM` as [start, end), or null when it is not one. */
export function monthRange(month: string): { start: string; end: string } | null {
  const m = MONTH.exec(month);
  if (!m) return null;
  const y = Number(m[1]);
  const mo = Number(m[2]) - 1;
  return { start: new Date(Date.UTC(y, mo, 1)).toISOString(), end: new Date(Date.UTC(y, mo + 1, 1)).toISOString() };
}

export const monthOf = (iso: string) => iso.slice(0, 7);

/** Why a month cannot have a statement (null: it can): not a month, in the future, or before the workspace existed. */
export function statementMonthProblem(month: string, now: Date, workspaceCreated: string): string | null {
  if (!monthRange(month)) return `month must be a UTC calendar month written YYYY-MM, e.g. ${monthOf(now.toISOString())}`;
  const current = monthOf(now.toISOString());
  if (month > current) return `${month} has not begun: the latest statement is for ${current} (the month so far)`;
  const first = monthOf(workspaceCreated);
  if (month < first) return `The workspace was created in ${first}: there is no statement before it`;
  return null;
}

/** The months a workspace has statements for, newest first: from its creation to the current month. */
export function statementMonths(workspaceCreated: string, now: Date): string[] {
  const out: string[] = [];
  const first = monthOf(workspaceCreated);
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  for (let m = monthOf(d.toISOString()); m >= first; m = monthOf(d.toISOString())) {
    out.push(m);
    d.setUTCMonth(d.getUTCMonth() - 1);
  }
  return out;
}

/** Folds money lines (in any order) into one month's statement. */
export class StatementBuilder {
  private opening = 0n;
  private readonly credits: StatementCredit[] = [];
  private readonly expiries: StatementExpiry[] = [];
  private readonly usage = new Map<string, StatementUsage>();
  private readonly receipts: Array<{ position: bigint; line: string }> = [];
  private readonly range: { start: string; end: string };

  constructor(
    private readonly workspaceId: string,
    private readonly month: string,
  ) {
    const r = monthRange(month);
    if (!r) throw new RangeError(`not a month: ${month}`);
    this.range = r;
  }

  add(l: StatementLineInput): void {
    // Times compare as instants: ISO-8601 UTC strings of one format order like their instants.
    const at = new Date(l.at).toISOString();
    if (at < this.range.start) {
      this.opening += l.amount;
      return;
    }
    if (at >= this.range.end) return;
    if (l.type === 'TokensDebited') {
      const id = `${l.keyId ?? ''}\u0000${l.model ?? ''}`;
      let u = this.usage.get(id);
      if (!u)
        this.usage.set(id, (u = { keyId: l.keyId ?? '', config: l.model ?? '', requests: 0, inputTokens: 0, outputTokens: 0, cost: 0n }));
      u.requests += 1;
      u.inputTokens += l.inputTokens ?? 0;
      u.outputTokens += l.outputTokens ?? 0;
      u.cost += -l.amount;
      const position = BigInt(l.position);
      this.receipts.push({
        position,
        line: receiptsDigestLine({
          position: position.toString(),
          requestId: l.ref,
          keyId: l.keyId ?? '',
          inputTokens: l.inputTokens ?? 0,
          outputTokens: l.outputTokens ?? 0,
          cost: formatUsd(-l.amount),
        }),
      });
      return;
    }
    if (l.type === 'CreditExpired') {
      this.expiries.push({ at, ref: l.ref, amount: -l.amount });
      return;
    }
    this.credits.push({
      at,
      kind: l.type === 'DepositSucceeded' ? 'deposit' : l.type === 'AutoReloadSucceeded' ? 'reload' : 'grant',
      ref: l.ref,
      paymentReference: l.paymentIntentId ?? null,
      amount: l.amount,
    });
  }

  result(): MonthlyStatement {
    const credits = [...this.credits].sort((a, b) => a.at.localeCompare(b.at) || a.ref.localeCompare(b.ref));
    const usage = [...this.usage.values()].sort((a, b) => a.keyId.localeCompare(b.keyId) || a.config.localeCompare(b.config));
    const deposited = credits.filter((c) => c.kind === 'deposit').reduce((n, c) => n + c.amount, 0n);
    const reloaded = credits.filter((c) => c.kind === 'reload').reduce((n, c) => n + c.amount, 0n);
    const granted = credits.filter((c) => c.kind === 'grant').reduce((n, c) => n + c.amount, 0n);
    const expiries = [...this.expiries].sort((a, b) => a.at.localeCompare(b.at) || a.ref.localeCompare(b.ref));
    const expired = expiries.reduce((n, e) => n + e.amount, 0n);
    const debited = usage.reduce((n, u) => n + u.cost, 0n);
    return {
      workspaceId: this.workspaceId,
      month: this.month,
      periodStart: this.range.start,
      periodEnd: this.range.end,
      opening: this.opening,
      credits,
      expiries,
      usage,
      deposited,
      reloaded,
      granted,
      expired,
      debited,
      closing: this.opening + deposited + reloaded + granted - debited - expired,
      receipts: receiptsDigestOf(this.receipts),
    };
  }
}

/** One month's statement of these lines. */
export function monthlyStatement(workspaceId: string, month: string, lines: Iterable<StatementLineInput>): MonthlyStatement {
  const b = new StatementBuilder(workspaceId, month);
  for (const l of lines) b.add(l);
  return b.result();
}
