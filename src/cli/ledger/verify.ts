import type { Redis } from 'ioredis';
import { LedgerReplay, WorkspaceTotals, BALANCES, LEDGER } from '../../billing';
import { formatUsd } from '../../platform/money';
import { streamPrefix } from '../../platform/streams';
import type { EventStore } from '../../platform/eventstore/port';
import type { Keyspace } from '../../platform/projections/keyspace';
import { ReadModels } from '../../platform/projections/read-models';
import { globEscape } from '../../platform/projections/generations';
import { scanAll } from '../../platform/redis';
import type { Services } from '../../services';
import { allEvents } from './all-events';
import { out } from './out';

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

/** Every key matching `pattern` on every primary, each with `read`'s reply (pipelined on the node that holds it). */
async function scanRead(redis: Redis, pattern: string, read: 'hgetall' | 'get'): Promise<Array<[string, unknown]>> {
  const out: Array<[string, unknown]> = [];
  await scanAll(redis, pattern, async (node, keys) => {
    const p = node.pipeline();
    for (const k of keys) p[read](k);
    const res = (await p.exec()) ?? [];
    keys.forEach((k, i) => out.push([k, res[i]?.[1]]));
  });
  return out;
}

/** Reads one projection's per-workspace state together with its checkpoint (retried while it moves). */
async function snapshot(
  models: ReadModels,
  name: string,
  read: (gen: string) => Promise<Map<string, Record<string, string>>>,
): Promise<{ checkpoint: bigint; state: Map<string, Record<string, string>> }> {
  const { redis, ks } = models;
  for (let attempt = 0; ; attempt++) {
    const gen = await models.gen(name);
    const cp1 = (await redis.get(ks.checkpoint(name, gen))) ?? '0';
    const state = await read(gen);
    const cp2 = (await redis.get(ks.checkpoint(name, gen))) ?? '0';
    const gen2 = await models.gen(name);
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
  const models = new ReadModels(redis, ks);
  const balances = await snapshot(models, BALANCES, async (gen) => {
    // Each workspace's balances hash: rm:balances:{gen}:{ws:<id>} (its other keys go on after the tag).
    const prefix = `${ks.wsGenPrefix(BALANCES, gen)}{ws:`;
    const out = new Map<string, Record<string, string>>();
    for (const [k, v] of await scanRead(redis, `${globEscape(prefix)}*}`, 'hgetall'))
      out.set(k.slice(prefix.length, -1), (v as Record<string, string>) ?? {});
    return out;
  });
  const ledger = await snapshot(models, LEDGER, async (gen) => {
    const prefix = ks.rm(LEDGER, gen, 'ws', '');
    const out = new Map<string, Record<string, string>>();
    for (const [k, v] of await scanRead(redis, `${globEscape(prefix)}*:balance`, 'get'))
      if (k.endsWith(':balance')) out.set(k.slice(prefix.length, -':balance'.length), { balance: (v as string | null) ?? '0' });
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
    if (!tookBalances && e.position > balances.checkpoint) {
      copy(atBalances);
      tookBalances = true;
    }
    if (!tookLedger && e.position > ledger.checkpoint) {
      copy(atLedger);
      tookLedger = true;
    }
    if (e.stream.startsWith(streamPrefix.billing) || e.stream.startsWith(streamPrefix.inference)) replay.apply(e);
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
        differences.push({
          workspaceId: ws,
          projection: 'balances',
          field,
          replayed: r[field].toString(),
          projected: projected.toString(),
        });
      }
    }
  }
  for (const ws of new Set([...atLedger.keys(), ...ledger.state.keys()])) {
    const r = atLedger.get(ws) ?? zero;
    const projected = BigInt(ledger.state.get(ws)?.balance ?? '0');
    if (projected !== r.balance) {
      differences.push({
        workspaceId: ws,
        projection: 'ledger',
        field: 'balance',
        replayed: r.balance.toString(),
        projected: projected.toString(),
      });
    }
  }
  const negative = [...replay.totals.entries()]
    .filter(([, t]) => t.lowest < 0n)
    .map(([workspaceId, t]) => ({ workspaceId, lowest: t.lowest.toString() }));
  return { position: balances.checkpoint.toString(), workspaces: replay.totals.size, events, differences, negative };
}

/** Prints the verification; exit code 1 on any difference or a balance that went below zero. */
export async function printVerify(s: Services, o: { json?: boolean }): Promise<void> {
  const r = await verifyLedger(s.store, s.redis, s.ks);
  if (o.json) out(JSON.stringify(r, null, 2));
  else {
    out(`verified ${r.workspaces} workspaces over ${r.events} events at position ${r.position}: ${r.differences.length} differences`);
    for (const d of r.differences) {
      out(
        `  ${d.workspaceId} ${d.projection}.${d.field}: replayed ${formatUsd(BigInt(d.replayed))} USD, projected ${formatUsd(BigInt(d.projected))} USD`,
      );
    }
    for (const n of r.negative) out(`  ${n.workspaceId}: the replayed balance went below zero (lowest ${formatUsd(BigInt(n.lowest))} USD)`);
  }
  if (r.differences.length || r.negative.length) process.exitCode = 1;
}
