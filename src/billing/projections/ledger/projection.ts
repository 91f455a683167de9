import { type MoneyEvent } from '../../ledger';
import { assertNever, type EventRecord } from '../../../platform/event';
import { projection } from '../../../platform/projections/projection';
import { luaScript } from '../../../platform/redis-scripts';

export const LEDGER = 'ledger';

/**
 * Every money event per workspace, oldest first, each with the balance after it: what
 * GET …/billing/ledger pages through.
 *
 *   rm:ledger:{gen}:ws:{wsId}:entries   list of JSON LedgerEntry
 *   rm:ledger:{gen}:ws:{wsId}:balance   running balance (nano-USD integer string)
 *
 * The running balance is computed inside the MULTI by a script: INCRBY, then GET for the exact
 * string (INCRBY's reply reaches Lua as a double and would round above 2^53), spliced into the JSON.
 */
export interface LedgerEntry {
  /** Global position of the event: a stable, ordered id. */
  position: string;
  /** ISO-8601 time the event was recorded. */
  at: string;
  type: 'DepositSucceeded' | 'AutoReloadSucceeded' | 'TokensDebited';
  /** depositId, reloadId or requestId. */
  ref: string;
  /** Signed nano-USD: + for deposits and reloads, − for debits. */
  amountNanoUsd: string;
  balanceNanoUsd: string;
  paymentIntentId?: string;
  by?: string;
  keyId?: string;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
}

/** Appends one money event's entry with the running balance after it (run once per event: tx.evalEach). */
export const APPEND = luaScript('billing/projections/ledger/append.lua', {
  keys: ['balance', 'entries'],
  args: ['amount', 'head', 'tail'],
});

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
  handles: ['DepositSucceeded', 'AutoReloadSucceeded', 'TokensDebited'],
  apply(event, tx) {
    const ws = event.data.workspaceId;
    // balanceNanoUsd goes last: the script splices the exact running balance in, then `"}`.
    const head = ledgerEntryJsonHead(event);
    const amount = event.type === 'TokensDebited' ? negated(event.data.amountNanoUsd) : event.data.amountNanoUsd;
    // Once per event, in order, all of a batch's entries in one EVAL (tx.evalEach).
    APPEND.each(tx, { balance: tx.key('ws', ws, 'balance'), entries: tx.key('ws', ws, 'entries') }, { amount, head, tail: '"}' });
  },
});
