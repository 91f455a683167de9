import { Command } from 'commander';
import type { Redis } from 'ioredis';
import { foldBilling } from '../domain/billing/billing';
import { LedgerReplay, MoneyLine, WorkspaceTotals } from '../domain/billing/ledger';
import { formatUsd } from '../domain/money';
import { streams } from '../domain/streams';
import type { EventStore, RecordedEvent } from '../eventstore/port';
import { createPaymentGateway } from '../payments';
import type { PaymentGateway } from '../payments/port';
import { BALANCES } from '../projections/balances/projection';
import type { Keyspace } from '../projections/keyspace';
import { LEDGER } from '../projections/ledger/projection';
import { fail, withServices } from './context';

/**
 * Finance tools: `tollgate ledger statement|verify|export|reconcile`. Everything here is replayed
 * from the event store, the source of truth; verify and reconcile compare it with the Redis
 * projections and with the payment gateway.
 */

/** Every event of the store, oldest first, in batches (positions after 0, as the projection runner reads). */
export async function* allEvents(store: EventStore, opts: { upTo?: bigint; batch?: number } = {}): AsyncIterable<RecordedEvent> {
  const size = opts.batch ?? 5000;
  let from = 0n;
  for (;;) {
    const events = (await store.readAll({ fromPosition: from, maxCount: size + 1 })).filter((e) => e.position > from);
    if (events.length === 0) return;
    for (const e of events) {
      if (opts.upTo !== undefined && e.position > opts.upTo) return;
      yield e;
    }
    from = events[events.length - 1].position;
  }
}

// ------------------------------------------------------------------------------------------------
// statement / export

export interface StatementLine extends Omit<MoneyLine, 'amount' | 'balance' | 'position'> {
  position: string;
  amount: string;
  balance: string;
  amountNanoUsd: string;
  balanceNanoUsd: string;
}

export async function moneyLines(
  store: EventStore,
  opts: { workspaceId?: string; from?: string; to?: string } = {},
): Promise<{ lines: MoneyLine[]; totals: Map<string, WorkspaceTotals> }> {
  const replay = new LedgerReplay();
  const lines: MoneyLine[] = [];
  for await (const e of allEvents(store)) {
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

export const toStatementLine = (l: MoneyLine): StatementLine => ({
  ...l,
  position: l.position.toString(),
  amount: formatUsd(l.amount),
  balance: formatUsd(l.balance),
  amountNanoUsd: l.amount.toString(),
  balanceNanoUsd: l.balance.toString(),
});

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
  ]
    .map(csvCell)
    .join(',');
}

export const csvHeader = () => CSV_COLUMNS.join(',');

// ------------------------------------------------------------------------------------------------
// verify

export interface VerifyDifference {
  workspaceId: string;
  projection: 'balances' | 'ledger';
  field: string;
  replayed: string;
  projected: string;
}

export interface VerifyReport {
  /** The position both sides were compared at. */
  position: string;
  workspaces: number;
  events: number;
  differences: VerifyDifference[];
  /** Workspaces whose replayed balance went below zero at some point. */
  negative: Array<{ workspaceId: string; lowest: string }>;
}

async function activeGen(redis: Redis, ks: Keyspace, name: string): Promise<string> {
  return (await redis.get(ks.active(name))) ?? '0';
}

async function scanHashes(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** Reads one projection's per-workspace state together with its checkpoint (retried while it moves). */
async function snapshot(
  redis: Redis,
  ks: Keyspace,
  name: string,
  read: (gen: string) => Promise<Map<string, Record<string, string>>>,
): Promise<{ checkpoint: bigint; state: Map<string, Record<string, string>> }> {
  for (let attempt = 0; ; attempt++) {
    const gen = await activeGen(redis, ks, name);
    const cp1 = (await redis.get(ks.checkpoint(name, gen))) ?? '0';
    const state = await read(gen);
    const cp2 = (await redis.get(ks.checkpoint(name, gen))) ?? '0';
    const gen2 = await activeGen(redis, ks, name);
    if ((cp1 === cp2 && gen === gen2) || attempt >= 20) return { checkpoint: BigInt(cp2), state };
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Replays every billing and inference stream from the event store, recomputes each workspace's
 * balance (and deposited, reloaded, debited) and compares it with the balances projection and the
 * ledger projection's running balance, each at the position that projection had reached.
 */
export async function verifyLedger(store: EventStore, redis: Redis, ks: Keyspace): Promise<VerifyReport> {
  const balances = await snapshot(redis, ks, BALANCES, async (gen) => {
    const prefix = ks.rm(BALANCES, gen, 'ws', '');
    const keys = await scanHashes(redis, `${prefix}*`);
    const out = new Map<string, Record<string, string>>();
    const p = redis.pipeline();
    for (const k of keys) p.hgetall(k);
    const res = (await p.exec()) ?? [];
    keys.forEach((k, i) => out.set(k.slice(prefix.length), (res[i]?.[1] as Record<string, string>) ?? {}));
    return out;
  });
  const ledger = await snapshot(redis, ks, LEDGER, async (gen) => {
    const prefix = ks.rm(LEDGER, gen, 'ws', '');
    const keys = (await scanHashes(redis, `${prefix}*:balance`)).filter((k) => k.endsWith(':balance'));
    const out = new Map<string, Record<string, string>>();
    const values = keys.length ? await redis.mget(...keys) : [];
    keys.forEach((k, i) => out.set(k.slice(prefix.length, -':balance'.length), { balance: values[i] ?? '0' }));
    return out;
  });

  const replay = new LedgerReplay();
  const atBalances = new Map<string, WorkspaceTotals>();
  const atLedger = new Map<string, WorkspaceTotals>();
  const copy = (into: Map<string, WorkspaceTotals>) => {
    into.clear();
    for (const [ws, t] of replay.totals) into.set(ws, { ...t });
  };
  let events = 0;
  const upTo = balances.checkpoint > ledger.checkpoint ? balances.checkpoint : ledger.checkpoint;
  let tookBalances = false;
  let tookLedger = false;
  for await (const e of allEvents(store, { upTo })) {
    if (!tookBalances && e.position > balances.checkpoint) (copy(atBalances), (tookBalances = true));
    if (!tookLedger && e.position > ledger.checkpoint) (copy(atLedger), (tookLedger = true));
    if (e.stream.startsWith('billing-') || e.stream.startsWith('inference-')) replay.apply(e);
    events++;
  }
  if (!tookBalances) copy(atBalances);
  if (!tookLedger) copy(atLedger);

  const differences: VerifyDifference[] = [];
  const zero = { balance: 0n, deposited: 0n, reloaded: 0n, debited: 0n, lowest: 0n };
  for (const ws of new Set([...atBalances.keys(), ...balances.state.keys()])) {
    const r = atBalances.get(ws) ?? zero;
    const h = balances.state.get(ws) ?? {};
    for (const field of ['balance', 'deposited', 'reloaded', 'debited'] as const) {
      const projected = BigInt(h[field] ?? '0');
      if (projected !== r[field]) {
        differences.push({ workspaceId: ws, projection: 'balances', field, replayed: r[field].toString(), projected: projected.toString() });
      }
    }
  }
  for (const ws of new Set([...atLedger.keys(), ...ledger.state.keys()])) {
    const r = atLedger.get(ws) ?? zero;
    const projected = BigInt(ledger.state.get(ws)?.balance ?? '0');
    if (projected !== r.balance) {
      differences.push({ workspaceId: ws, projection: 'ledger', field: 'balance', replayed: r.balance.toString(), projected: projected.toString() });
    }
  }
  const negative = [...replay.totals.entries()]
    .filter(([, t]) => t.lowest < 0n)
    .map(([workspaceId, t]) => ({ workspaceId, lowest: t.lowest.toString() }));
  return { position: balances.checkpoint.toString(), workspaces: replay.totals.size, events, differences, negative };
}

// ------------------------------------------------------------------------------------------------
// reconcile

export type ReconcileKind =
  /** The ledger credits a payment the gateway does not show as succeeded. */
  | 'missing_at_gateway'
  /** Amounts differ between the ledger and the gateway. */
  | 'amount_mismatch'
  /** The gateway took money the ledger has not credited (its deposit or reload is pending, failed or unknown). */
  | 'not_in_ledger'
  /** More than one successful payment for one deposit or reload. */
  | 'duplicate_charge';

export interface ReconcileDifference {
  kind: ReconcileKind;
  workspaceId: string;
  ledgerId: string;
  paymentIntentId: string | null;
  ledgerAmount: string | null;
  gatewayAmount: string | null;
  note: string;
}

export interface ReconcileReport {
  gateway: string;
  ledgerCredits: number;
  ledgerTotalNanoUsd: string;
  gatewayCharges: number;
  gatewayTotalNanoUsd: string;
  matched: number;
  /** Deposits requested and reloads triggered that have no outcome yet. */
  pending: number;
  differences: ReconcileDifference[];
}

interface Credit {
  kind: 'deposit' | 'reload';
  workspaceId: string;
  ledgerId: string;
  paymentIntentId: string;
  amount: bigint;
}

/** The ledger's deposits and reloads against the payment gateway's successful charges. */
export async function reconcile(store: EventStore, gateway: PaymentGateway): Promise<ReconcileReport> {
  const credits = new Map<string, Credit>(); // by PaymentIntent id
  const streamsSeen = new Set<string>();
  for await (const e of allEvents(store)) {
    if (!e.stream.startsWith('billing-')) continue;
    streamsSeen.add(e.stream);
    const d = e.data as { workspaceId: string; depositId?: string; reloadId?: string; paymentIntentId?: string; amountNanoUsd?: string };
    if (e.type === 'DepositSucceeded' || e.type === 'AutoReloadSucceeded') {
      const kind = e.type === 'DepositSucceeded' ? 'deposit' : 'reload';
      credits.set(d.paymentIntentId!, {
        kind,
        workspaceId: d.workspaceId,
        ledgerId: (kind === 'deposit' ? d.depositId : d.reloadId)!,
        paymentIntentId: d.paymentIntentId!,
        amount: BigInt(d.amountNanoUsd!),
      });
    }
  }
  let pending = 0;
  const states = new Map<string, ReturnType<typeof foldBilling>>();
  for (const stream of streamsSeen) {
    const st = foldBilling(await store.readStream(stream));
    states.set(stream.slice('billing-'.length), st);
    pending += [...st.deposits.values()].filter((x) => x.status === 'requested').length + (st.inFlight ? 1 : 0);
  }

  const differences: ReconcileDifference[] = [];
  const byLedgerId = new Map<string, string[]>();
  let gatewayCharges = 0;
  let gatewayTotal = 0n;
  let matched = 0;
  const seen = new Set<string>();
  for await (const p of gateway.listPayments()) {
    if (p.status !== 'succeeded' || !p.metadata.tollgate_kind) continue;
    gatewayCharges++;
    gatewayTotal += p.amountNanoUsd;
    seen.add(p.paymentIntentId);
    const ledgerId = p.metadata.ledger_id ?? '';
    byLedgerId.set(ledgerId, [...(byLedgerId.get(ledgerId) ?? []), p.paymentIntentId]);
    const c = credits.get(p.paymentIntentId);
    if (!c) {
      const st = states.get(p.metadata.workspace_id ?? '');
      const entry = p.metadata.tollgate_kind === 'deposit' ? st?.deposits.get(ledgerId) : st?.reloads.get(ledgerId);
      const state = entry ? (entry.status === 'requested' || entry.status === 'in_flight' ? 'still pending' : entry.status) : 'unknown to the ledger';
      differences.push({
        kind: 'not_in_ledger',
        workspaceId: p.metadata.workspace_id ?? '',
        ledgerId,
        paymentIntentId: p.paymentIntentId,
        ledgerAmount: entry ? entry.amount.toString() : null,
        gatewayAmount: p.amountNanoUsd.toString(),
        note: `the ${p.metadata.tollgate_kind} is ${state}`,
      });
      continue;
    }
    if (c.amount !== p.amountNanoUsd) {
      differences.push({
        kind: 'amount_mismatch',
        workspaceId: c.workspaceId,
        ledgerId: c.ledgerId,
        paymentIntentId: p.paymentIntentId,
        ledgerAmount: c.amount.toString(),
        gatewayAmount: p.amountNanoUsd.toString(),
        note: 'amounts differ',
      });
      continue;
    }
    matched++;
  }
  for (const c of credits.values()) {
    if (seen.has(c.paymentIntentId)) continue;
    differences.push({
      kind: 'missing_at_gateway',
      workspaceId: c.workspaceId,
      ledgerId: c.ledgerId,
      paymentIntentId: c.paymentIntentId,
      ledgerAmount: c.amount.toString(),
      gatewayAmount: null,
      note: 'credited in the ledger, but the gateway has no successful payment with this id',
    });
  }
  for (const [ledgerId, pis] of byLedgerId) {
    if (pis.length > 1) {
      differences.push({
        kind: 'duplicate_charge',
        workspaceId: '',
        ledgerId,
        paymentIntentId: pis.join(' '),
        ledgerAmount: null,
        gatewayAmount: null,
        note: `${pis.length} successful payments for one ledger entry`,
      });
    }
  }
  const ledgerTotal = [...credits.values()].reduce((s, c) => s + c.amount, 0n);
  return {
    gateway: gateway.kind,
    ledgerCredits: credits.size,
    ledgerTotalNanoUsd: ledgerTotal.toString(),
    gatewayCharges,
    gatewayTotalNanoUsd: gatewayTotal.toString(),
    matched,
    pending,
    differences,
  };
}

// ------------------------------------------------------------------------------------------------
// the command

const out = (s: string) => process.stdout.write(s + '\n');

export function ledgerCommand(): Command {
  const cmd = new Command('ledger').description('finance: statements, verification, export and reconciliation (replayed from the event store)');

  cmd
    .command('statement')
    .description("every money event of a workspace with its running balance")
    .requiredOption('--workspace <id>', 'workspace id')
    .option('--json', 'print JSON')
    .action((o: { workspace: string; json?: boolean }) =>
      withServices(async (s) => {
        const { lines, totals } = await moneyLines(s.store, { workspaceId: o.workspace });
        const t = totals.get(o.workspace);
        const st = foldBilling(await s.store.readStream(streams.billing(o.workspace)));
        const failed = [...st.deposits.values()].filter((d) => d.status === 'failed').length + [...st.reloads.values()].filter((r) => r.status === 'failed').length;
        if (o.json) {
          out(
            JSON.stringify(
              {
                workspaceId: o.workspace,
                lines: lines.map(toStatementLine),
                totals: {
                  deposited: formatUsd(t?.deposited ?? 0n),
                  reloaded: formatUsd(t?.reloaded ?? 0n),
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
        out(['position'.padStart(10), 'time'.padEnd(24), 'type'.padEnd(20), 'amount'.padStart(18), 'balance'.padStart(18), 'reference'].join('  '));
        for (const l of lines) {
          const sign = l.amount >= 0n ? '+' : '';
          out(
            [
              l.position.toString().padStart(10),
              l.at.padEnd(24),
              l.type.padEnd(20),
              (sign + formatUsd(l.amount)).padStart(18),
              formatUsd(l.balance).padStart(18),
              l.paymentIntentId ?? (l.keyId ? `${l.ref} key ${l.keyId} ${l.model} ${l.inputTokens}+${l.outputTokens} tokens` : l.ref),
            ].join('  '),
          );
        }
        out(
          `deposits ${formatUsd(t?.deposited ?? 0n)}  reloads ${formatUsd(t?.reloaded ?? 0n)}  debits ${formatUsd(t?.debited ?? 0n)}  closing balance ${formatUsd(t?.balance ?? 0n)}  (${lines.length} lines; ${failed} failed charges moved no money)`,
        );
      }),
    );

  cmd
    .command('verify')
    .description('replay every billing and inference stream and compare each balance with the projections; exit 1 on any difference')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) =>
      withServices(async (s) => {
        const r = await verifyLedger(s.store, s.redis, s.ks);
        if (o.json) out(JSON.stringify(r, null, 2));
        else {
          out(`verified ${r.workspaces} workspaces over ${r.events} events at position ${r.position}: ${r.differences.length} differences`);
          for (const d of r.differences) {
            out(`  ${d.workspaceId} ${d.projection}.${d.field}: replayed ${formatUsd(BigInt(d.replayed))} USD, projected ${formatUsd(BigInt(d.projected))} USD`);
          }
          for (const n of r.negative) out(`  ${n.workspaceId}: the replayed balance went below zero (lowest ${formatUsd(BigInt(n.lowest))} USD)`);
        }
        if (r.differences.length || r.negative.length) process.exitCode = 1;
      }),
    );

  cmd
    .command('export')
    .description('every money event with its running balance, as CSV (or JSON lines)')
    .option('--format <format>', 'csv or jsonl', 'csv')
    .option('--workspace <id>', 'only this workspace')
    .option('--from <iso>', 'lines at or after this time (ISO-8601)')
    .option('--to <iso>', 'lines before this time (ISO-8601)')
    .action((o: { format: string; workspace?: string; from?: string; to?: string }) =>
      withServices(async (s) => {
        if (o.format !== 'csv' && o.format !== 'jsonl') fail(`unknown --format "${o.format}"; use csv or jsonl`);
        for (const t of [o.from, o.to]) if (t !== undefined && Number.isNaN(Date.parse(t))) fail(`"${t}" is not an ISO-8601 time`);
        const iso = (t?: string) => (t === undefined ? undefined : new Date(t).toISOString());
        const { lines } = await moneyLines(s.store, { workspaceId: o.workspace, from: iso(o.from), to: iso(o.to) });
        if (o.format === 'csv') {
          out(csvHeader());
          for (const l of lines) out(csvRow(l));
        } else for (const l of lines) out(JSON.stringify(toStatementLine(l)));
      }),
    );

  cmd
    .command('reconcile')
    .description("compare the ledger's deposits and reloads with the payment gateway's charges; exit 1 on any difference")
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) =>
      withServices(async (s) => {
        const r = await reconcile(s.store, createPaymentGateway(s.config, s.redis, s.ks));
        if (o.json) out(JSON.stringify(r, null, 2));
        else {
          out(
            `reconciled against ${r.gateway}: ledger ${r.ledgerCredits} credits (${formatUsd(BigInt(r.ledgerTotalNanoUsd))} USD), gateway ${r.gatewayCharges} charges (${formatUsd(BigInt(r.gatewayTotalNanoUsd))} USD), ${r.matched} matched, ${r.pending} pending, ${r.differences.length} differences`,
          );
          for (const d of r.differences) {
            out(`  ${d.kind}: workspace ${d.workspaceId || '?'} entry ${d.ledgerId} payment ${d.paymentIntentId ?? '-'} — ${d.note}`);
          }
        }
        if (r.differences.length) process.exitCode = 1;
      }),
    );
  return cmd;
}
