import type { Redis } from 'ioredis';
import { LedgerReplay, BALANCES, LEDGER } from '../../billing';
import { formatUsd } from '../../platform/money';
import { streamPrefix } from '../../platform/streams';
import type { EventStore, RecordedEvent } from '../../platform/eventstore/port';
import type { Keyspace } from '../../platform/projections/keyspace';
import { ReadModels } from '../../platform/projections/read-models';
import { globEscape } from '../../platform/projections/generations';
import { scanAll } from '../../platform/redis';
import type { Services } from '../../services';
import { partitionOf, PartitionKeyspace } from '../../platform/projections/partitions';
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

/**
 * Reads one projection's per-workspace state together with its checkpoints (retried while they
 * move): one per partition (PROJECTION_PARTITIONS), since each partition's runner applies its own
 * workspaces' events and moves a checkpoint of its own; with one partition, the unpartitioned one.
 */
async function snapshot(
  models: ReadModels,
  name: string,
  partitions: number,
  read: (gen: string) => Promise<Map<string, Record<string, string>>>,
): Promise<{ checkpoints: bigint[]; state: Map<string, Record<string, string>> }> {
  const { redis, ks } = models;
  const count = Math.max(1, partitions);
  const keys = (gen: string) => Array.from({ length: count }, (_, i) => new PartitionKeyspace(ks.prefix, i, count).checkpoint(name, gen));
  // One GET per key: on a Redis Cluster the partitions' checkpoints need not share a slot.
  const read_ = async (gen: string) => Promise.all(keys(gen).map(async (k) => (await redis.get(k)) ?? '0'));
  for (let attempt = 0; ; attempt++) {
    const gen = await models.gen(name);
    const cp1 = await read_(gen);
    const state = await read(gen);
    const cp2 = await read_(gen);
    const gen2 = await models.gen(name);
    if ((cp1.join() === cp2.join() && gen === gen2) || attempt >= 20) return { checkpoints: cp2.map((c) => BigInt(c)), state };
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Replays every billing and inference stream from the event store, recomputes each workspace's
 * balance (and deposited, reloaded, debited) and compares it with the balances projection and the
 * ledger projection's running balance, each at the position that projection had reached.
 */
export async function verifyLedger(store: EventStore, redis: Redis, ks: Keyspace, partitions = 1): Promise<VerifyReport> {
  const models = new ReadModels(redis, ks);
  const balances = await snapshot(models, BALANCES, partitions, async (gen) => {
    // Each workspace's balances hash: rm:balances:{gen}:{ws:<id>} (its other keys go on after the tag).
    const prefix = `${ks.wsGenPrefix(BALANCES, gen)}{ws:`;
    const out = new Map<string, Record<string, string>>();
    for (const [k, v] of await scanRead(redis, `${globEscape(prefix)}*}`, 'hgetall'))
      out.set(k.slice(prefix.length, -1), (v as Record<string, string>) ?? {});
    return out;
  });
  const ledger = await snapshot(models, LEDGER, partitions, async (gen) => {
    const prefix = ks.rm(LEDGER, gen, 'ws', '');
    const out = new Map<string, Record<string, string>>();
    for (const [k, v] of await scanRead(redis, `${globEscape(prefix)}*:balance`, 'get'))
      if (k.endsWith(':balance')) out.set(k.slice(prefix.length, -':balance'.length), { balance: (v as string | null) ?? '0' });
    return out;
  });

  // Two replays, each folding a workspace's events only up to the checkpoint of the partition
  // that applies them: what that projection has seen of each workspace.
  const atBalances = new LedgerReplay();
  const atLedger = new LedgerReplay();
  const seenBy = (checkpoints: bigint[], e: RecordedEvent) =>
    e.position <= checkpoints[checkpoints.length > 1 ? partitionOf(e, checkpoints.length) : 0]!;
  let events = 0;
  const max = (xs: bigint[]) => xs.reduce((a, b) => (b > a ? b : a), 0n);
  const upTo = [max(balances.checkpoints), max(ledger.checkpoints)].reduce((a, b) => (b > a ? b : a));
  for await (const e of allEvents(store, { upTo, progress: 'verify' })) {
    if (e.stream.startsWith(streamPrefix.billing) || e.stream.startsWith(streamPrefix.inference)) {
      if (seenBy(balances.checkpoints, e)) atBalances.apply(e);
      if (seenBy(ledger.checkpoints, e)) atLedger.apply(e);
    }
    events++;
  }
  // What each grant had left at the balances projection's position (its book: 'g:<grantId>' fields).
  const leftAtBalances = new Map<string, Map<string, bigint>>();
  for (const [ws, book] of atBalances.books) {
    leftAtBalances.set(ws, new Map([...book.grants.values()].filter((g) => g.remaining > 0n).map((g) => [g.grantId, g.remaining])));
  }

  const differences: VerifyDifference[] = [];
  const zero = { balance: 0n, deposited: 0n, reloaded: 0n, granted: 0n, expired: 0n, debited: 0n, lowest: 0n };
  for (const ws of new Set([...atBalances.totals.keys(), ...balances.state.keys()])) {
    const r = atBalances.totals.get(ws) ?? zero;
    const h = balances.state.get(ws) ?? {};
    // Each grant's remaining amount, as the replay's drawdown (grants.ts) left it.
    const left = leftAtBalances.get(ws) ?? new Map<string, bigint>();
    const grantIds = new Set([
      ...left.keys(),
      ...Object.keys(h)
        .filter((f) => f.startsWith('g:'))
        .map((f) => f.slice(2)),
    ]);
    for (const id of grantIds) {
      const projected = BigInt(h[`g:${id}`] ?? '0');
      const replayed = left.get(id) ?? 0n;
      if (projected !== replayed) {
        differences.push({
          workspaceId: ws,
          projection: 'balances',
          field: `grant ${id}`,
          replayed: replayed.toString(),
          projected: projected.toString(),
        });
      }
    }
    for (const field of ['balance', 'deposited', 'reloaded', 'granted', 'expired', 'debited'] as const) {
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
  for (const ws of new Set([...atLedger.totals.keys(), ...ledger.state.keys()])) {
    const r = atLedger.totals.get(ws) ?? zero;
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
  const negative = [...atBalances.totals.entries()]
    .filter(([, t]) => t.lowest < 0n)
    .map(([workspaceId, t]) => ({ workspaceId, lowest: t.lowest.toString() }));
  // The lowest partition's position: every workspace was compared at least that far.
  const position = balances.checkpoints.reduce((a, b) => (b < a ? b : a));
  return { position: position.toString(), workspaces: atBalances.totals.size, events, differences, negative };
}

/** Prints the verification; exit code 1 on any difference or a balance that went below zero. */
export async function printVerify(s: Services, o: { json?: boolean }): Promise<void> {
  const r = await verifyLedger(s.store, s.redis, s.ks, s.config.PROJECTION_PARTITIONS);
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
