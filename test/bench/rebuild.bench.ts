/**
 * Projection rebuild speed: fills a temp SQLite store with n events through the adapter (bulk
 * appends of BATCH events per call), then rebuilds a balance-like projection (one HINCRBY per
 * event) with `rebuildProjection` and reports events per second.
 *
 *   npx tsx test/bench/rebuild.bench.ts [n]        (default 1,000,000)
 *
 * test/bench/store.bench.ts calls `benchRebuild(n)` from its hook.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { NewEvent } from '../../src/platform/eventstore/port';
import { SqliteEventStore } from '../../src/platform/eventstore/sqlite';
import { Keyspace } from '../../src/platform/projections/keyspace';
import type { Projection } from '../../src/platform/projections/projection';
import { rebuildProjection } from '../../src/platform/projections/rebuild';

export interface RebuildBenchResult {
  events: number;
  fillMs: number;
  rebuildMs: number;
  eventsPerSecond: number;
  /** CPU time of this process during the rebuild. */
  nodeCpuMs: number;
  /** CPU time of the Redis server during the rebuild (includes anything else it served meanwhile). */
  redisCpuMs: number;
}

const WORKSPACES = 1000;
const FILL_BATCH = 10_000;

/** A balance-like projection: HINCRBY per money event, nothing for the rest. */
export const benchBalances: Projection = {
  name: 'bench-balances',
  handles: new Set(['DepositSucceeded', 'TokensDebited']),
  apply(e, tx) {
    const d = e.data as { workspaceId: string; amount: string };
    const delta = e.type === 'DepositSucceeded' ? d.amount : `-${d.amount}`;
    tx.multi.hincrby(tx.key('ws', d.workspaceId), 'balance', delta);
  },
};

export async function benchRebuild(n: number, opts: { quiet?: boolean } = {}): Promise<RebuildBenchResult> {
  const say = (s: string) => (opts.quiet ? undefined : console.log(s));
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-rebuild-'));
  const store = new SqliteEventStore({ file: join(dir, 'events.sqlite') });
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const prefix = `bench:${randomUUID().slice(0, 8)}:`;
  const ks = new Keyspace(prefix);
  try {
    const fillStart = Date.now();
    for (let written = 0, b = 0; written < n; b++) {
      const count = Math.min(FILL_BATCH, n - written);
      const events: NewEvent[] = new Array(count);
      for (let i = 0; i < count; i++) {
        const k = written + i;
        const ws = `ws-${k % WORKSPACES}`;
        // 1 in 4 events is one the projection does not handle (the checkpoint still moves over it).
        const type = k % 4 === 0 ? 'InferenceRequested' : k % 4 === 1 ? 'DepositSucceeded' : 'TokensDebited';
        events[i] = { id: randomUUID(), type, data: { workspaceId: ws, amount: String(1000 + (k % 97)) } };
      }
      await store.append(`bench-${b % 100}`, events, { expectedRevision: 'any' });
      written += count;
    }
    const fillMs = Date.now() - fillStart;
    say(`filled ${n} events in ${fillMs} ms`);

    // CPU time (ours and the Redis server's) too: wall-clock figures swing with other load on the machine.
    const redisCpu = async () => {
      const info = await redis.info('cpu');
      const num = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0);
      return (num('used_cpu_user') + num('used_cpu_sys')) * 1000;
    };
    const redisBefore = await redisCpu();
    const cpuBefore = process.cpuUsage();
    const result = await rebuildProjection({ store, redis, ks, projection: benchBalances });
    const cpu = process.cpuUsage(cpuBefore);
    const nodeCpuMs = Math.round((cpu.user + cpu.system) / 1000);
    const redisCpuMs = Math.round((await redisCpu()) - redisBefore);
    const eventsPerSecond = Math.round((result.events * 1000) / Math.max(result.ms, 1));
    say(
      `rebuilt ${benchBalances.name}: ${result.events} events in ${result.ms} ms = ${eventsPerSecond} events/s ` +
        `(CPU: this process ${nodeCpuMs} ms, Redis server ${redisCpuMs} ms)`,
    );
    return { events: result.events, fillMs, rebuildMs: result.ms, eventsPerSecond, nodeCpuMs, redisCpuMs };
  } finally {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
    redis.disconnect();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const n = Number(process.argv[2] ?? 1_000_000);
  benchRebuild(n).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
