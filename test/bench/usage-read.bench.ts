/**
 * bench:usage-read — what GET …/usage costs Redis for a 30-day daily series now that days are summed
 * from their hours on read (src/billing/projections/usage/queries.ts): usageSeries over 720 hour
 * buckets, against the 30 day buckets the layout before issue 31 read (the same fields, HGETALL
 * each, summed alike). Every bucket holds 8 groups × 4 counters, a busy workspace's hour.
 *
 *   npm run bench:usage-read [-- --reads <n> (50) --days <n> (30)]
 *
 * Prints the median and p90 wall time of one read (client side) and the Redis server's CPU per read
 * (INFO cpu around the rounds: getrusage, the whole server, so other clients' work counts too).
 */
import { Redis } from 'ioredis';
import { USAGE } from '../../src/billing/projections/usage/projection';
import { usageSeries } from '../../src/billing/projections/usage/queries';
import { Keyspace } from '../../src/platform/projections/keyspace';
import { ReadModels } from '../../src/platform/projections/read-models';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { numberArg } from './bench-http';

const READS = numberArg('reads', 50);
const DAYS = numberArg('days', 30);

async function serverCpu(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const num = (name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)![1]);
  return num('used_cpu_sys') + num('used_cpu_user');
}

async function main() {
  const prefix = uniquePrefix('usage-read');
  const ks = new Keyspace(prefix);
  const redis = new Redis(TEST_REDIS_URL);
  const rm = new ReadModels(redis, ks);
  try {
    const fields: Record<string, string> = {};
    for (const g of ['k:a', 'k:b', 'm:x', 'm:y', 'u:1', 'u:2', 'e:inference', 'e:openai'])
      for (const m of ['req', 'in', 'out', 'cost']) fields[`${g}:${m}`] = '123456789';
    const to = Math.floor(Date.now() / 86_400_000) * 86_400;
    const from = to - DAYS * 86_400;
    const k = (...p: string[]) => ks.rm(USAGE, '0', ...p);
    const p = redis.pipeline();
    for (let t = from; t < to; t += 3600) p.hset(k('hour', 'ws', String(t)), fields);
    for (let t = from; t < to; t += 86_400) p.hset(k('day', 'ws', String(t)), fields);
    await p.exec();
    // The read of the layout before: one HGETALL per day, every field summed.
    const before = async () => {
      const q = redis.pipeline();
      for (let t = from; t < to; t += 86_400) q.hgetall(k('day', 'ws', String(t)));
      let sum = 0n;
      for (const [, h] of (await q.exec()) ?? []) for (const v of Object.values(h as Record<string, string>)) sum += BigInt(v);
      return sum;
    };
    const after = () => usageSeries(rm, { workspaceId: 'ws', granularity: 'day', from, to, groupBy: 'key' });
    const rows: string[] = [];
    for (const round of [1, 2]) {
      for (const [name, read, buckets] of [
        ['days stored (before)', before, DAYS],
        ['days summed from hours (now)', after, DAYS * 24],
      ] as const) {
        await read();
        const wall: number[] = [];
        const c0 = await serverCpu(redis);
        for (let i = 0; i < READS; i++) {
          const t0 = performance.now();
          await read();
          wall.push(performance.now() - t0);
        }
        const cpuMs = ((await serverCpu(redis)) - c0) * 1000;
        wall.sort((a, b) => a - b);
        const at = (q: number) => wall[Math.min(wall.length - 1, Math.floor(q * wall.length))].toFixed(2);
        rows.push(`| ${round} | ${name} | ${buckets} | ${at(0.5)} | ${at(0.9)} | ${(cpuMs / READS).toFixed(2)} |`);
      }
    }
    console.log(`usage read, ${DAYS} days by day, grouped by key; ${READS} reads per row`);
    console.log('| round | layout | HGETALLs per read | wall ms p50 | wall ms p90 | redis CPU ms per read |');
    console.log('|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    redis.disconnect();
    await cleanupPrefix(TEST_REDIS_URL, prefix);
  }
}

void main();
