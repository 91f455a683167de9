import { Redis } from 'ioredis';
import { CROSS } from '../../../src/webhooks/balance-alerts/projection';
import { BatchWrites } from '../../../src/platform/projections/batch-writes';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

/**
 * The balance-alert crossing script (src/webhooks/balance-alerts/cross.lua) on the real Redis,
 * called directly through the batch runtime it runs in: exact comparisons of nano-USD strings
 * around 2^53, negative balances, a missing threshold and a cleared one.
 */

const prefix = uniquePrefix('cross');
const redis = new Redis(TEST_REDIS_URL);
const TWO_53 = 2n ** 53n;

afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
});

let n = 0;
function workspace() {
  n++;
  return { state: `${prefix}ws:${n}`, crossings: `${prefix}crossings:${n}` };
}

/** Runs the calls as one batch, in order (one EVAL, as the projector sends it). */
async function batch(keys: { state: string; crossings: string }, calls: Array<['threshold' | 'delta', string, string?]>) {
  const writes = new BatchWrites();
  for (const [kind, value, eventId] of calls) CROSS.each(writes, keys, { kind, value, eventId: eventId ?? '' });
  const multi = redis.multi();
  writes.flush(multi);
  const replies = await multi.exec();
  expect(replies!.filter(([err]) => err)).toEqual([]);
}

test('without a threshold the balance is summed and nothing crosses', async () => {
  const ws = workspace();
  await batch(ws, [
    ['delta', '5'],
    ['delta', '-7', 'd1'],
  ]);
  expect(await redis.hgetall(ws.state)).toEqual({ balance: '-2' });
  expect(await redis.exists(ws.crossings)).toBe(0);
});

test('a dip below the threshold is recorded once with the exact balance, above 2^53', async () => {
  const ws = workspace();
  const t = TWO_53 + 1n;
  await batch(ws, [
    ['delta', (TWO_53 + 2n).toString()],
    ['threshold', t.toString()],
    ['delta', '-1', 'at-threshold'],
    ['delta', '-1', 'below'],
    ['delta', '-1', 'still-below'],
  ]);
  expect(await redis.hgetall(ws.crossings)).toEqual({ below: `${t}:${TWO_53}` });
  expect(await redis.hget(ws.state, 'balance')).toBe((TWO_53 - 1n).toString());
});

test('a deposit back to the threshold re-arms it; negative balances compare exactly', async () => {
  const ws = workspace();
  await batch(ws, [
    ['threshold', '-10'],
    ['delta', '-10', 'to-threshold'],
    ['delta', '-1', 'd1'],
    ['delta', '1', 'back'],
    ['delta', '-100', 'd2'],
  ]);
  expect(await redis.hgetall(ws.crossings)).toEqual({ d1: '-10:-11', d2: '-10:-110' });
});

test("a cleared threshold ('') stops the crossings", async () => {
  const ws = workspace();
  await batch(ws, [
    ['delta', '10'],
    ['threshold', '5'],
    ['threshold', ''],
    ['delta', '-10', 'd1'],
  ]);
  expect(await redis.hgetall(ws.state)).toEqual({ balance: '0' });
  expect(await redis.exists(ws.crossings)).toBe(0);
});
