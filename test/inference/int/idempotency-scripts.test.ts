import { Redis } from 'ioredis';
import { IdempotencyStore } from '../../../src/inference/idempotency/store';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

/**
 * The idempotency CLAIM and OWNER scripts (src/inference/idempotency/*.lua) on the real Redis,
 * called directly with a clock the test moves: each claim outcome, the owner's token checks, a
 * lease that ran out, an empty reply list kept as a list.
 */

const prefix = uniquePrefix('idem');
const redis = new Redis(TEST_REDIS_URL);
let now = 1_700_000_000_000;
let tokens = 0;
const store = new IdempotencyStore(
  redis,
  new Keyspace(prefix),
  60_000,
  1_000,
  () => now,
  () => `t${++tokens}`,
);

afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
});

test('a missing key is claimed; the same body while it runs is told to wait, another body is refused', async () => {
  const key = store.key('k1', 'a');
  const first = await store.claim(key, 'h1', 'req-1');
  expect(first).toEqual({ kind: 'claimed', token: 't1', previousRequestId: null });
  now += 1;
  expect(await store.claim(key, 'h1', 'req-2')).toEqual({ kind: 'running', retryAfterSeconds: 1 });
  expect(await store.claim(key, 'h2', 'req-3')).toEqual({ kind: 'mismatch' });
  expect(await redis.pttl(key)).toBeGreaterThan(59_000);
});

test('a retry while the call runs is told the time left of a typical call: at least 1 s, at most the lease left', async () => {
  const long = new IdempotencyStore(
    redis,
    new Keyspace(prefix),
    60_000,
    30_000,
    () => now,
    () => `t${++tokens}`,
  );
  const key = long.key('k2', 'a');
  const c = await long.claim(key, 'h', 'req-1');
  if (c.kind !== 'claimed') throw new Error('not claimed');
  now += 200;
  // Nothing recorded yet: a typical call is taken to last a second, not the 30 s lease.
  expect(await long.claim(key, 'h', 'req-2')).toEqual({ kind: 'running', retryAfterSeconds: 1 });
  long.observeDuration(6_000);
  expect(await long.claim(key, 'h', 'req-2')).toEqual({ kind: 'running', retryAfterSeconds: 6 });
  // The renewal keeps the start: the elapsed time still counts.
  now += 2_000;
  expect(await long.renew(key, c.token)).toBe(true);
  expect(await long.claim(key, 'h', 'req-2')).toEqual({ kind: 'running', retryAfterSeconds: 4 });
  // Past the typical duration: 1 s, never 0.
  now += 10_000;
  expect(await long.claim(key, 'h', 'req-2')).toEqual({ kind: 'running', retryAfterSeconds: 1 });
  // A typical duration longer than the lease left: the lease left.
  long.observeDuration(1_000_000);
  expect(await long.claim(key, 'h', 'req-2')).toEqual({ kind: 'running', retryAfterSeconds: 20 });
});

test('only the owner renews and completes; the recorded reply is replayed, an empty chunk list stays a list', async () => {
  const key = store.key('k1', 'b');
  const c = await store.claim(key, 'h', 'req-1');
  if (c.kind !== 'claimed') throw new Error('not claimed');
  expect(await store.renew(key, 'someone-else')).toBe(false);
  expect(await store.renew(key, c.token)).toBe(true);
  expect(JSON.parse((await redis.get(key))!).lease).toBe(now + 1_000);
  const reply = { status: 200, headers: { 'content-type': 'text/plain' }, chunks: [] };
  expect(await store.complete(key, c.token, reply)).toBe(true);
  expect(await store.complete(key, c.token, reply)).toBe(false);
  expect(await store.claim(key, 'h', 'req-2')).toEqual({ kind: 'done', requestId: 'req-1', reply });
});

test('a running claim whose lease ran out is taken over, naming the request that died', async () => {
  const key = store.key('k1', 'c');
  await store.claim(key, 'h', 'req-dead');
  now += 1_001;
  const again = await store.claim(key, 'h', 'req-new');
  expect(again).toMatchObject({ kind: 'claimed', previousRequestId: 'req-dead' });
});

test('a release by the owner deletes the record (a new claim starts clean); by anyone else it does nothing', async () => {
  const key = store.key('k1', 'd');
  const c = await store.claim(key, 'h', 'req-1');
  if (c.kind !== 'claimed') throw new Error('not claimed');
  expect(await store.release(key, 'other')).toBe(false);
  expect(await store.release(key, c.token)).toBe(true);
  expect(await redis.exists(key)).toBe(0);
  expect(await store.release(key, c.token)).toBe(false);
});
