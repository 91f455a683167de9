/**
 * What per-key budgets cost the reserve script: reservations per second against the real Redis,
 * side by side in alternating rounds, for
 *   no key  the current script called without a key (what the sweeper-era callers do)
 *   key     with a key that has no budget (every inference request since budgets)
 *   budget  with a key that has a budget and month-to-date spend
 *   member  a key with a daily budget whose creator has a weekly member budget (both checked)
 *
 *   npx tsx test/bench/key-budget.bench.ts [--n 4000] [--rounds 4] [--concurrency 50]
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import Redis from 'ioredis';
import { Keyspace } from '../../src/platform/projections/keyspace';
import { Reservations } from '../../src/billing/projections/balances/reservations';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../support/redis';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const N = arg('n', 4000);
const ROUNDS = arg('rounds', 4);
const CONCURRENCY = arg('concurrency', 50);
const MONTH = '2030-01';
const PERIODS = { daily: '2030-01-15', weekly: '2030-W03', monthly: MONTH };

async function main() {
  const prefix = uniquePrefix();
  const redis = new Redis(TEST_REDIS_URL);
  const ks = new Keyspace(prefix);
  const resv = new Reservations(redis, ks);
  const ws = randomUUID();
  const budgetKey = randomUUID();
  const plainKey = randomUUID();
  await redis.hset(ks.rm('balances', '0', 'ws', ws), 'balance', (10n ** 18n).toString());
  await redis.set(ks.rm('balances', '0', 'key-budget', budgetKey), (10n ** 17n).toString());
  await redis.hset(ks.rm('balances', '0', 'key-spend', budgetKey), MONTH, '123456789');
  const memberKey = randomUUID();
  await redis.set(ks.rm('balances', '0', 'key-budget', memberKey), (10n ** 17n).toString());
  await redis.set(ks.rm('balances', '0', 'key-budget-period', memberKey), 'daily');
  await redis.set(ks.rm('balances', '0', 'key-owner', memberKey), 'u1');
  await redis.set(ks.rm('balances', '0', 'member-budget', ws, 'u1'), (10n ** 17n).toString());
  await redis.set(ks.rm('balances', '0', 'member-budget-period', ws, 'u1'), 'weekly');
  await redis.hset(ks.rm('balances', '0', 'member-spend', ws, 'u1'), PERIODS.weekly, '123456789');

  type Mode = { name: string; reserve: (requestId: string) => Promise<unknown> };
  const modes: Mode[] = [
    { name: 'no key', reserve: (id) => resv.reserve(ws, id, 1000n, 1) },
    { name: 'key', reserve: (id) => resv.reserve(ws, id, 1000n, 1, { keyId: plainKey, periods: PERIODS }) },
    { name: 'budget', reserve: (id) => resv.reserve(ws, id, 1000n, 1, { keyId: budgetKey, periods: PERIODS }) },
    { name: 'member', reserve: (id) => resv.reserve(ws, id, 1000n, 1, { keyId: memberKey, periods: PERIODS }) },
  ];
  const rates = new Map<string, number[]>(modes.map((m) => [m.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate the order each round: a noisy neighbour hits every mode alike.
    const order = round % 2 ? [...modes].reverse() : modes;
    for (const m of order) {
      const ids = Array.from({ length: N }, () => randomUUID());
      const started = process.hrtime.bigint();
      for (let i = 0; i < N; i += CONCURRENCY) await Promise.all(ids.slice(i, i + CONCURRENCY).map((id) => m.reserve(id)));
      const secs = Number(process.hrtime.bigint() - started) / 1e9;
      rates.get(m.name)!.push(N / secs);
      for (let i = 0; i < N; i += 500) await Promise.all(ids.slice(i, i + 500).map((id) => resv.release(ws, id)));
      await redis.del(ks.shared('resv', ws));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const base = median(rates.get(modes[0].name)!);
  console.log(
    `reserve script, ${N} reservations × ${ROUNDS} alternating rounds, ${CONCURRENCY} in flight; load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  console.log('| mode | reservations/s (median) | vs ' + modes[0].name + ' |');
  console.log('|---|---|---|');
  for (const m of modes) {
    const r = median(rates.get(m.name)!);
    console.log(`| ${m.name} | ${Math.round(r)} | ${(r / base).toFixed(2)} |`);
  }
  await cleanupPrefix(TEST_REDIS_URL, prefix);
  redis.disconnect();
}

void main();
