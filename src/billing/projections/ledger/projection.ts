import { type MoneyEvent } from '../../ledger';
import { assertNever, type EventRecord } from '../../../platform/event';
import { projection } from '../../../platform/projections/projection';
import { luaScript } from '../../../platform/redis-scripts';
import { CREDIT_NOTE_PRIORITY, drawOrderKey } from '../../grants';
import { grantOf } from '../../grants';
import { grantBookLua } from '../grants/grant-book';

export const LEDGER = 'ledger';

/**
 * Every money event per workspace, oldest first, each with the balance after it: what
 * GET …/billing/ledger pages through.
 *
 *   rm:ledger:{gen}:ws:{wsId}:entries   list of JSON LedgerEntry
 *   rm:ledger:{gen}:ws:{wsId}:balance   running balance (nano-USD integer string)
 *   rm:ledger:{gen}:ws:{wsId}:book      the ledger's own grant book (../grants/grant-book.inc.lua), and
 *   rm:ledger:{gen}:ws:{wsId}:order     its draw order: which grants each debit drew from ("drawn")
 *
 * The running balance is computed inside the MULTI by a script: INCRBY, then GET for the exact
 * string (INCRBY's reply reaches Lua as a double and would round above 2^53), spliced into the JSON.
 */
export interface LedgerEntry {
  /** Global position of the event: a stable, ordered id. */
  position: string;
  /** ISO-8601 time the event was recorded. */
  at: string;
  type: 'DepositSucceeded' | 'AutoReloadSucceeded' | 'CreditGranted' | 'CreditNoteIssued' | 'CreditExpired' | 'TokensDebited';
  /** depositId, reloadId, grantId or requestId (a deposit's or reload's grant has its id). */
  ref: string;
  /** Signed nano-USD: + for deposits, reloads and grants, − for debits and expiries. */
  amountNanoUsd: string;
  balanceNanoUsd: string;
  paymentIntentId?: string;
  by?: string;
  keyId?: string;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  /** CreditGranted: its kind, draw priority and expiry. */
  category?: string;
  priority?: number;
  expiresAt?: string | null;
  /** CreditNoteIssued: the request it credits and why. */
  requestId?: string;
  reason?: string;
  /** TokensDebited: the grants it was paid from, in draw order (their sum is the debit unless the ledger ran dry). */
  drawn?: Array<{ grantId: string; amountNanoUsd: string }>;
}

/** Appends one money event's entry with the running balance after it, and keeps the ledger's grant book (once per event: tx.evalEach). */
export const ENTRY = luaScript(
  'billing/projections/ledger/entry.lua',
  { keys: [], args: ['op', 'book', 'order', 'balance', 'entries', 'key', 'amount', 'atMs', 'head', 'tail'] },
  [grantBookLua],
);

export function ledgerEntryOf(event: EventRecord<MoneyEvent>): Omit<LedgerEntry, 'balanceNanoUsd'> {
  const base = { position: event.position.toString(), at: event.created };
  switch (event.type) {
    case 'DepositSucceeded': {
      const d = event.data;
      return {
        ...base,
        type: 'DepositSucceeded',
        ref: d.depositId,
        amountNanoUsd: d.amountNanoUsd,
        paymentIntentId: d.paymentIntentId,
        by: d.by,
      };
    }
    case 'AutoReloadSucceeded': {
      const d = event.data;
      return { ...base, type: 'AutoReloadSucceeded', ref: d.reloadId, amountNanoUsd: d.amountNanoUsd, paymentIntentId: d.paymentIntentId };
    }
    case 'CreditGranted': {
      const d = event.data;
      return {
        ...base,
        type: 'CreditGranted',
        ref: d.grantId,
        amountNanoUsd: d.amountNanoUsd,
        by: d.by,
        category: d.category,
        priority: d.priority,
        expiresAt: d.expiresAt,
      };
    }
    case 'CreditNoteIssued': {
      const d = event.data;
      return {
        ...base,
        type: 'CreditNoteIssued',
        ref: d.creditNoteId,
        amountNanoUsd: d.amountNanoUsd,
        by: d.by,
        category: 'credit_note',
        priority: CREDIT_NOTE_PRIORITY,
        expiresAt: null,
        requestId: d.requestId,
        reason: d.reason,
      };
    }
    case 'CreditExpired':
      // The amount is what the grant had left: the projection's book knows it (entry.lua).
      return { ...base, type: 'CreditExpired', ref: event.data.grantId, amountNanoUsd: '' };
    case 'TokensDebited': {
      const d = event.data;
      return {
        ...base,
        type: 'TokensDebited',
        ref: d.requestId,
        amountNanoUsd: (-BigInt(d.amountNanoUsd)).toString(),
        keyId: d.keyId,
        model: d.config,
        inputTokens: d.inputTokens,
        outputTokens: d.outputTokens,
      };
    }
    default:
      return assertNever(event);
  }
}

/**
 * `JSON.stringify({ ...ledgerEntryOf(event), balanceNanoUsd: '' })` without its last two characters
 * (`"}`), the same text built directly: the projector writes one per money event, and the entry
 * object, its spread copy and the generic stringify were a visible share of its CPU and garbage.
 * test/billing/unit/ledger-entry-json.test.ts holds it equal to the generic form.
 */
export function ledgerEntryJsonHead(event: EventRecord<MoneyEvent>): string {
  const q = JSON.stringify;
  const base = `{"position":"${event.position}","at":${q(event.created)},"type":"${event.type}"`;
  switch (event.type) {
    case 'DepositSucceeded': {
      const d = event.data;
      return `${base}${opt('ref', d.depositId)}${opt('amountNanoUsd', d.amountNanoUsd)}${opt('paymentIntentId', d.paymentIntentId)}${opt('by', d.by)},"balanceNanoUsd":"`;
    }
    case 'AutoReloadSucceeded': {
      const d = event.data;
      return `${base}${opt('ref', d.reloadId)}${opt('amountNanoUsd', d.amountNanoUsd)}${opt('paymentIntentId', d.paymentIntentId)},"balanceNanoUsd":"`;
    }
    case 'CreditGranted': {
      const d = event.data;
      return (
        `${base}${opt('ref', d.grantId)}${opt('amountNanoUsd', d.amountNanoUsd)}${opt('by', d.by)}${opt('category', d.category)}` +
        `${opt('priority', d.priority)}${opt('expiresAt', d.expiresAt)},"balanceNanoUsd":"`
      );
    }
    case 'CreditNoteIssued': {
      const d = event.data;
      return (
        `${base}${opt('ref', d.creditNoteId)}${opt('amountNanoUsd', d.amountNanoUsd)}${opt('by', d.by)}${opt('category', 'credit_note')}` +
        `${opt('priority', CREDIT_NOTE_PRIORITY)}${opt('expiresAt', null)}${opt('requestId', d.requestId)}${opt('reason', d.reason)},"balanceNanoUsd":"`
      );
    }
    case 'CreditExpired':
      // entry.lua writes the amount, then the balance.
      return `${base}${opt('ref', event.data.grantId)},"amountNanoUsd":"`;
    case 'TokensDebited': {
      const d = event.data;
      return (
        `${base}${opt('ref', d.requestId)},"amountNanoUsd":"${negated(d.amountNanoUsd)}"${opt('keyId', d.keyId)}${opt('model', d.config)}` +
        `${opt('inputTokens', d.inputTokens)}${opt('outputTokens', d.outputTokens)},"balanceNanoUsd":"`
      );
    }
    default:
      return assertNever(event);
  }
}

/** A property as JSON.stringify writes it, nothing when the value is undefined (as it leaves one out). */
function opt(name: string, value: unknown): string {
  return value === undefined ? '' : `,"${name}":${JSON.stringify(value)}`;
}

/** −amount of a decimal integer string, as `(-BigInt(a)).toString()` writes it. */
function negated(amount: string): string {
  return (-BigInt(amount)).toString();
}

export const ledgerProjection = projection<MoneyEvent>()({
  name: LEDGER,
  handles: ['DepositSucceeded', 'AutoReloadSucceeded', 'CreditGranted', 'CreditNoteIssued', 'CreditExpired', 'TokensDebited'],
  apply(event, tx) {
    const ws = event.data.workspaceId;
    // balanceNanoUsd goes last: the script splices the exact running balance in, then `"}` (or the debit's "drawn").
    const head = ledgerEntryJsonHead(event);
    const common = {
      book: tx.key('ws', ws, 'book'),
      order: tx.key('ws', ws, 'order'),
      balance: tx.key('ws', ws, 'balance'),
      entries: tx.key('ws', ws, 'entries'),
      atMs: String(Date.parse(event.created)).padStart(13, '0'),
      head,
      tail: '"}',
    };
    // Once per event, in order, all of a batch's entries in one EVAL (tx.evalEach).
    if (event.type === 'TokensDebited') ENTRY.each(tx, {}, { ...common, op: 'debit', key: '', amount: event.data.amountNanoUsd });
    else if (event.type === 'CreditExpired') ENTRY.each(tx, {}, { ...common, op: 'expire', key: event.data.grantId, amount: '0' });
    else ENTRY.each(tx, {}, { ...common, op: 'grant', key: drawOrderKey(grantOf(event)), amount: event.data.amountNanoUsd });
  },
});
