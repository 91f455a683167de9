import type { BillingEvent } from '../../billing/events';
import { fold, LedgerReplay, MoneyLine, WorkspaceTotals, monthlyStatement, monthRange } from '../../billing';
import { readEvents } from '../../platform/eventstore/command-handler';
import { formatUsd } from '../../platform/money';
import { streams } from '../../platform/streams';
import type { EventStore } from '../../platform/eventstore/port';
import type { Services } from '../../services';
import { fail } from '../context';
import { allEvents } from './all-events';
import { out } from './out';

// `ledger statement` and `ledger export`: the money lines replayed from the event store.

export interface StatementLine extends Omit<MoneyLine, 'amount' | 'balance' | 'position' | 'drawn'> {
  position: string;
  /** A debit's split over the grants it drew from. */
  drawn?: Array<{ grantId: string; amount: string; amountNanoUsd: string }>;
  amount: string;
  balance: string;
  amountNanoUsd: string;
  balanceNanoUsd: string;
}

export async function moneyLines(
  store: EventStore,
  opts: { workspaceId?: string; from?: string; to?: string; progress?: string } = {},
): Promise<{ lines: MoneyLine[]; totals: Map<string, WorkspaceTotals> }> {
  const replay = new LedgerReplay();
  const lines: MoneyLine[] = [];
  for await (const e of allEvents(store, { progress: opts.progress })) {
    // The running balance needs every earlier line, so filters apply after the fold.
    const line = replay.apply(e);
    if (!line) continue;
    if (opts.workspaceId && line.workspaceId !== opts.workspaceId) continue;
    if (opts.from && line.at < opts.from) continue;
    if (opts.to && line.at >= opts.to) continue;
    lines.push(line);
  }
  return { lines, totals: replay.totals };
}

export const toStatementLine = ({ drawn, ...l }: MoneyLine): StatementLine => ({
  ...l,
  position: l.position.toString(),
  amount: formatUsd(l.amount),
  balance: formatUsd(l.balance),
  amountNanoUsd: l.amount.toString(),
  balanceNanoUsd: l.balance.toString(),
  ...(drawn ? { drawn: drawn.map((d) => ({ grantId: d.grantId, amount: formatUsd(d.amount), amountNanoUsd: d.amount.toString() })) } : {}),
});

/** A debit's split as one CSV cell: `grantId:nanoUsd` joined by `;`. */
const drawnCell = (l: MoneyLine) => (l.drawn ?? []).map((d) => `${d.grantId}:${d.amount}`).join(';');

const CSV_COLUMNS = [
  'position',
  'time',
  'workspace_id',
  'type',
  'reference',
  'amount_usd',
  'balance_usd',
  'amount_nano_usd',
  'balance_nano_usd',
  'payment_intent_id',
  'key_id',
  'model',
  'input_tokens',
  'output_tokens',
  'drawn_from',
];

function csvCell(v: unknown): string {
  const s = v === undefined || v === null ? '' : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvRow(l: MoneyLine): string {
  return [
    l.position,
    l.at,
    l.workspaceId,
    l.type,
    l.ref,
    formatUsd(l.amount),
    formatUsd(l.balance),
    l.amount,
    l.balance,
    l.paymentIntentId,
    l.keyId,
    l.model,
    l.inputTokens,
    l.outputTokens,
    drawnCell(l),
  ]
    .map(csvCell)
    .join(',');
}

export const csvHeader = () => CSV_COLUMNS.join(',');

/**
 * Prints a workspace's statement: every money line with its running balance, then the totals; with
 * --month, the monthly statement the API serves (GET …/statements/:month), computed by the same
 * StatementBuilder from a replay of the event store rather than from the ledger read model.
 */
export async function printStatement(s: Services, o: { workspace: string; json?: boolean; month?: string }): Promise<void> {
  // A mistyped id must not look like an empty statement: the workspace's own stream says it exists.
  if (!(await s.store.readStream(streams.workspace(o.workspace), { maxCount: 1 })).length) {
    fail(`no workspace ${o.workspace} in the event store (check the id: tollgate events read workspace-<id>)`);
  }
  const { lines, totals } = await moneyLines(s.store, { workspaceId: o.workspace, progress: 'statement' });
  if (o.month !== undefined) return printMonth(o.workspace, o.month, lines, o.json);
  const t = totals.get(o.workspace);
  const st = fold(await readEvents<BillingEvent>(s.store, streams.billing(o.workspace)));
  const failed =
    [...st.deposits.values()].filter((d) => d.status === 'failed').length +
    [...st.reloads.values()].filter((r) => r.status === 'failed').length;
  if (o.json) {
    out(
      JSON.stringify(
        {
          workspaceId: o.workspace,
          lines: lines.map(toStatementLine),
          totals: {
            deposited: formatUsd(t?.deposited ?? 0n),
            reloaded: formatUsd(t?.reloaded ?? 0n),
            granted: formatUsd(t?.granted ?? 0n),
            expired: formatUsd(t?.expired ?? 0n),
            debited: formatUsd(t?.debited ?? 0n),
            balance: formatUsd(t?.balance ?? 0n),
          },
          failedCharges: failed,
        },
        null,
        2,
      ),
    );
    return;
  }
  if (!lines.length && !st.paymentMethod) process.stderr.write(`no billing history for workspace ${o.workspace}\n`);
  out(`Statement for workspace ${o.workspace} (USD; replayed from the event store)`);
  out(
    ['position'.padStart(10), 'time'.padEnd(24), 'type'.padEnd(20), 'amount'.padStart(18), 'balance'.padStart(18), 'reference'].join('  '),
  );
  for (const l of lines) {
    const sign = l.amount >= 0n ? '+' : '';
    out(
      [
        l.position.toString().padStart(10),
        l.at.padEnd(24),
        l.type.padEnd(20),
        (sign + formatUsd(l.amount)).padStart(18),
        formatUsd(l.balance).padStart(18),
        l.paymentIntentId ??
          (l.keyId
            ? `${l.ref} key ${l.keyId} ${l.model} ${l.inputTokens}+${l.outputTokens} tokens${drawnText(l)}`
            : `${l.ref}${l.category ? ` ${l.category}` : ''}${l.expiresAt ? ` expires ${l.expiresAt}` : ''}`),
      ].join('  '),
    );
  }
  out(
    `deposits ${formatUsd(t?.deposited ?? 0n)}  reloads ${formatUsd(t?.reloaded ?? 0n)}  grants ${formatUsd(t?.granted ?? 0n)}  expired ${formatUsd(t?.expired ?? 0n)}  debits ${formatUsd(t?.debited ?? 0n)}  closing balance ${formatUsd(t?.balance ?? 0n)}  (${lines.length} lines; ${failed} failed charges moved no money)`,
  );
}

const drawnText = (l: MoneyLine) =>
  l.drawn?.length ? ` from ${l.drawn.map((d) => `${d.grantId} ${formatUsd(d.amount)}`).join(', ')}` : '';

/** Prints every money line (optionally of one workspace and a time range) as CSV or JSON lines. */
export async function printExport(s: Services, o: { format: string; workspace?: string; from?: string; to?: string }): Promise<void> {
  if (o.format !== 'csv' && o.format !== 'jsonl') fail(`unknown --format "${o.format}"; use csv or jsonl`);
  for (const t of [o.from, o.to]) if (t !== undefined && Number.isNaN(Date.parse(t))) fail(`"${t}" is not an ISO-8601 time`);
  const iso = (t?: string) => (t === undefined ? undefined : new Date(t).toISOString());
  const { lines } = await moneyLines(s.store, { workspaceId: o.workspace, from: iso(o.from), to: iso(o.to), progress: 'export' });
  if (o.format === 'csv') {
    out(csvHeader());
    for (const l of lines) out(csvRow(l));
  } else for (const l of lines) out(JSON.stringify(toStatementLine(l)));
}

function printMonth(workspaceId: string, month: string, lines: MoneyLine[], json?: boolean): void {
  if (!monthRange(month)) fail(`--month "${month}" is not a month; write YYYY-MM (UTC), e.g. 2026-11`);
  const st = monthlyStatement(workspaceId, month, lines);
  const money = {
    opening: formatUsd(st.opening),
    deposits: formatUsd(st.deposited),
    reloads: formatUsd(st.reloaded),
    grants: formatUsd(st.granted),
    expiries: formatUsd(st.expired),
    debits: formatUsd(st.debited),
    closing: formatUsd(st.closing),
  };
  if (json) {
    out(
      JSON.stringify(
        {
          workspaceId,
          month,
          periodStart: st.periodStart,
          periodEnd: st.periodEnd,
          ...money,
          credits: st.credits.map((c) => ({ ...c, amount: formatUsd(c.amount) })),
          expiries: st.expiries.map((e) => ({ ...e, amount: formatUsd(e.amount) })),
          usage: st.usage.map((u) => ({ ...u, cost: formatUsd(u.cost) })),
          receipts: st.receipts,
        },
        null,
        2,
      ),
    );
    return;
  }
  out(`Statement for workspace ${workspaceId}, ${month} (UTC; USD; replayed from the event store)`);
  out(`opening balance ${money.opening}`);
  for (const c of st.credits) out(`  ${c.at}  ${c.kind.padEnd(7)}  +${formatUsd(c.amount)}  ${c.paymentReference ?? c.ref}`);
  for (const e of st.expiries) out(`  ${e.at}  expiry   -${formatUsd(e.amount)}  ${e.ref}`);
  for (const u of st.usage)
    out(
      `  usage  key ${u.keyId}  ${u.config}  ${u.requests} ${u.requests === 1 ? 'request' : 'requests'}  ${u.inputTokens}+${u.outputTokens} tokens  -${formatUsd(u.cost)}`,
    );
  out(
    `deposits ${money.deposits}  reloads ${money.reloads}  grants ${money.grants}  expiries ${money.expiries}  debits ${money.debits}  closing balance ${money.closing}`,
  );
  out(`receipts ${st.receipts.count}  sha256 ${st.receipts.value}`);
}
