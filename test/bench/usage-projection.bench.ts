/**
 * The usage projection before and after it learned member and endpoint (a SET per InferenceRequested,
 * one Lua EVAL per TokensDebited): both rebuilt from one store in alternating rounds, events per
 * second and CPU (this process and the Redis server) side by side.
 *
 *   npx tsx test/bench/usage-projection.bench.ts [requests] [rounds]     (default 20,000 requests, 3 rounds)
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { NewEvent } from '../../src/platform/eventstore/port';
import { SqliteEventStore } from '../../src/platform/eventstore/sqlite';
import { Keyspace } from '../../src/platform/projections/keyspace';
import { projection, type Projection } from '../../src/platform/projections/projection';
import { rebuildProjection } from '../../src/platform/projections/rebuild';
import { bucketStart, BUCKET_SECONDS, usageProjection } from '../../src/billing/projections/usage/projection';
import type { TokensDebited } from '../../src/inference/events';

/** The retention the projection below had (before days were derived from hours). */
const RETENTION_BEFORE = { minute: 8 * 86400, hour: 100 * 86400, day: null } as const;

/** The usage projection as it was before (totals, key and model fields only), for the comparison. */
const usageBefore = projection<TokensDebited>()({
  name: 'usage-before',
  handles: ['TokensDebited'],
  apply(event, tx) {
    const d = event.data;
    const t = Math.floor(Date.parse(event.created) / 1000);
    for (const g of ['minute', 'hour', 'day'] as const) {
      const start = bucketStart(t, g);
      const key = tx.key(g, d.workspaceId, String(start));
      for (const prefix of ['t', `k:${d.keyId}`, `m:${d.config}`]) {
        tx.multi
          .hincrby(key, `${prefix}:req`, 1)
          .hincrby(key, `${prefix}:in`, d.inputTokens)
          .hincrby(key, `${prefix}:out`, d.outputTokens)
          .hincrby(key, `${prefix}:cost`, d.amountNanoUsd);
      }
      const keep = RETENTION_BEFORE[g];
      if (keep !== null) tx.multi.expireat(key, start + BUCKET_SECONDS[g] + keep);
    }
  },
});

async function main() {
  const requests = Number(process.argv[2] ?? 20_000);
  const rounds = Number(process.argv[3] ?? 3);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-usage-'));
  const store = new SqliteEventStore({ file: join(dir, 'events.sqlite') });
  const redis = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  const prefix = `bench:${randomUUID().slice(0, 8)}:`;
  const ks = new Keyspace(prefix);
  try {
    const keys = Array.from({ length: 50 }, (_, i) => ({ ws: `ws-${i % 10}`, keyId: `key-${i}` }));
    await store.append(
      'bench-keys',
      keys.map((k) => ({
        id: randomUUID(),
        type: 'ApiKeyCreated',
        data: {
          workspaceId: k.ws,
          keyId: k.keyId,
          name: k.keyId,
          keyHash: k.keyId,
          prefix: 'tg',
          last4: '0000',
          scopes: ['inference'],
          expiresAt: null,
          createdBy: `user-${k.keyId}`,
        },
      })),
      { expectedRevision: 'any' },
    );
    for (let done = 0; done < requests;) {
      const batch: NewEvent[] = [];
      for (let i = 0; i < 2500 && done < requests; i++, done++) {
        const k = keys[done % keys.length];
        const requestId = randomUUID();
        const common = { requestId, workspaceId: k.ws, keyId: k.keyId, config: done % 3 ? 'service_3_pi' : 'service_3_productivity' };
        batch.push({
          id: randomUUID(),
          type: 'InferenceRequested',
          data: {
            ...common,
            endpoint: done % 2 ? 'openai' : 'inference',
            promptTokens: 10,
            maxTokens: 50,
            reservedNanoUsd: '1',
            webSearch: false,
          },
        });
        batch.push({
          id: randomUUID(),
          type: 'TokensDebited',
          data: {
            ...common,
            inputTokens: 10,
            outputTokens: 20,
            inputPriceNanoUsd: '2500',
            outputPriceNanoUsd: '10000',
            amountNanoUsd: '225000',
          },
        });
      }
      await store.append(`bench-${done}`, batch, { expectedRevision: 'any' });
    }
    const redisCpu = async () => {
      const info = await redis.info('cpu');
      const num = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0);
      return (num('used_cpu_user') + num('used_cpu_sys')) * 1000;
    };
    const rows: Record<string, Array<{ eps: number; nodeMs: number; redisMs: number }>> = { before: [], after: [] };
    for (let r = 0; r < rounds; r++) {
      for (const [label, p] of (r % 2
        ? [
            ['after', usageProjection],
            ['before', usageBefore],
          ]
        : [
            ['before', usageBefore],
            ['after', usageProjection],
          ]) as Array<[string, Projection]>) {
        const rc = await redisCpu();
        const cpu = process.cpuUsage();
        const res = await rebuildProjection({ store, redis, ks, projection: p, lockTtlMs: 300_000 });
        const c = process.cpuUsage(cpu);
        rows[label].push({
          eps: Math.round((res.events * 1000) / Math.max(res.ms, 1)),
          nodeMs: Math.round((c.user + c.system) / 1000),
          redisMs: Math.round((await redisCpu()) - rc),
        });
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    for (const label of ['before', 'after']) {
      const x = rows[label];
      console.log(
        `${label}: events/s ${x.map((y) => y.eps).join(', ')} (median ${median(x.map((y) => y.eps))}); node CPU ms median ${median(x.map((y) => y.nodeMs))}; Redis CPU ms median ${median(x.map((y) => y.redisMs))}`,
      );
    }
  } finally {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (found.length) await redis.unlink(...found);
    } while (cursor !== '0');
    redis.disconnect();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
