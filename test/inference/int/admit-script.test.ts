import { Redis } from 'ioredis';
import { KeyIndex } from '../../../src/accounts';
import { Admission } from '../../../src/inference/routes/admission';
import { rateVerdict } from '../../../src/inference/routes/rate-limit';
import { periodIdsAt } from '../../../src/platform/budget-periods';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';
import { commandsRun } from '../../support/redis-monitor';

/**
 * The admission script (src/inference/routes/admit.lua) on the real Redis, called directly: each
 * step's verdict, what each refusal leaves untouched, the rate limit it alone decides, and exact
 * amounts around 2^53 nano-USD.
 */

const prefix = uniquePrefix('admit');
const ks = new Keyspace(prefix);
const redis = new Redis(TEST_REDIS_URL);
const admission = new Admission(redis, ks, new KeyIndex(redis, ks), `${prefix}rl:inference`, 5);
const now = new Date('2026-11-28T12:00:00.000Z');
const TWO_53 = 2n ** 53n;

afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
});

let n = 0;
/** A key record in generation 0 of the key index (no active pointer: the script reads '0'). */
async function key(fields: Partial<Record<'scopes' | 'expiresAt' | 'rateLimit', string>> = {}) {
  n++;
  const hash = `hash-${n}`;
  const rec = { keyId: `key-${n}`, workspaceId: `ws-${n}`, name: 'k', scopes: 'inference', expiresAt: '', rateLimit: '', ...fields };
  await redis.hset(ks.rm('keys', '0', 'hash', hash), rec);
  return { hash, ...rec };
}

const counter = (keyId: string) => redis.get(`${prefix}rl:inference:${keyId}`);
const admit = (keyHash: string, amount: bigint | null, scope = 'inference') =>
  admission.admit({ keyHash, scope, now, requestId: `req-${++n}`, amount, periods: periodIdsAt(now) });

test('an unknown key (no record, no generation pointer) is refused and counts nothing', async () => {
  expect(await admit('no-such-hash', 1n)).toEqual({ step: 'unknown' });
});

test('an expired key is refused before it is counted; one expiring later is admitted', async () => {
  const expired = await key({ expiresAt: now.toISOString() });
  expect((await admit(expired.hash, null)).step).toBe('expired');
  expect(await counter(expired.keyId)).toBeNull();
  const later = await key({ expiresAt: new Date(now.getTime() + 1).toISOString() });
  expect((await admit(later.hash, null)).step).toBe('counted');
});

test('a key without the scope is refused and not counted (scopes match whole names)', async () => {
  const k = await key({ scopes: 'keys:read,inference-x' });
  expect((await admit(k.hash, null)).step).toBe('forbidden');
  expect(await counter(k.keyId)).toBeNull();
});

test("the script alone decides the rate limit: the default, then the key's own; over it nothing is held", async () => {
  const k = await key();
  for (let i = 1; i <= 5; i++) {
    const a = await admit(k.hash, null);
    expect(a.step === 'counted' && a.counted).toMatchObject({ count: i, limit: 5, allowed: true });
  }
  const over = await admit(k.hash, null);
  expect(over.step === 'counted' && over.counted).toMatchObject({ count: 6, limit: 5, allowed: false });
  expect(over.step === 'counted' && over.counted.msLeft).toBeGreaterThan(0);
  expect(over.step === 'counted' && over.counted.msLeft).toBeLessThanOrEqual(60_000);
  expect(over.step === 'counted' && rateVerdict(over.counted)).toMatchObject({ allowed: false, limit: 5, remaining: 0 });

  const own = await key({ rateLimit: '1' });
  await redis.hset(ks.rm('balances', '0', 'ws', own.workspaceId), 'balance', '100');
  expect(await admit(own.hash, 10n)).toMatchObject({ step: 'counted', counted: { count: 1, limit: 1, allowed: true }, held: { ok: true } });
  const refused = await admit(own.hash, 10n);
  expect(refused).toMatchObject({ step: 'counted', counted: { count: 2, limit: 1, allowed: false } });
  expect(refused.step === 'counted' && refused.held).toBeUndefined();
  expect(await redis.hget(ks.shared('resv', own.workspaceId), '=total')).toBe('10');
});

test('a limit of 0 or less means the default', async () => {
  const k = await key({ rateLimit: '0' });
  const a = await admit(k.hash, null);
  expect(a.step === 'counted' && a.counted.limit).toBe(5);
});

test('exact amounts above 2^53: the whole balance is held to the unit, then one more is refused', async () => {
  const k = await key();
  const balance = TWO_53 + 3n;
  await redis.hset(ks.rm('balances', '0', 'ws', k.workspaceId), 'balance', balance.toString());
  const first = await admit(k.hash, TWO_53 + 1n);
  expect(first).toMatchObject({ step: 'counted', held: { ok: true, balance, held: TWO_53 + 1n } });
  const second = await admit(k.hash, 2n);
  expect(second).toMatchObject({ step: 'counted', held: { ok: true, held: balance } });
  const third = await admit(k.hash, 1n);
  expect(third).toMatchObject({ step: 'counted', held: { ok: false, balance, held: balance, available: 0n } });
  expect(await redis.hget(ks.shared('resv', k.workspaceId), '=total')).toBe(balance.toString());
  expect(await redis.hlen(ks.shared('resv', k.workspaceId))).toBe(4); // two holds, their sum and their key's
});

test('a workspace with no balance at all is refused, and holds nothing', async () => {
  const k = await key();
  expect(await admit(k.hash, 1n)).toMatchObject({ step: 'counted', held: { ok: false, balance: 0n, held: 0n, available: 0n } });
  expect(await redis.exists(ks.shared('resv', k.workspaceId))).toBe(0);
});

test("the key's budget in its period refuses what the balance covers, and undoes its holds", async () => {
  const k = await key();
  await redis.hset(ks.rm('balances', '0', 'ws', k.workspaceId), 'balance', '1000');
  await redis.set(ks.rm('balances', '0', 'key-budget', k.keyId), '100');
  await redis.hset(ks.rm('balances', '0', 'key-spend', k.keyId), periodIdsAt(now).monthly, '60');
  expect(await admit(k.hash, 40n)).toMatchObject({ held: { ok: true } });
  const over = await admit(k.hash, 1n);
  expect(over).toMatchObject({
    held: { ok: false, budget: { scope: 'key', budget: 100n, spent: 60n, heldByOthers: 40n, period: 'monthly' } },
  });
  expect(await redis.hmget(ks.shared('resv', k.workspaceId), '=total', `=k:${k.keyId}`)).toEqual(['40', '40']);
});

test('the key index generation comes from its pointer', async () => {
  const k = await key();
  await redis.set(ks.active('keys'), '7');
  try {
    expect(await admit(k.hash, null)).toEqual({ step: 'unknown' });
    await redis.hset(ks.rm('keys', '7', 'hash', k.hash), { keyId: k.keyId, workspaceId: k.workspaceId, scopes: 'inference' });
    expect((await admit(k.hash, null)).step).toBe('counted');
  } finally {
    await redis.del(ks.active('keys'));
  }
});

test('a window starts at its first request; a counter that lost its expiry starts a new one', async () => {
  const k = await key();
  const first = await admit(k.hash, null);
  expect(first.step === 'counted' && first.counted).toMatchObject({ count: 1, msLeft: 60_000 });
  const pttl = await redis.pttl(`${prefix}rl:inference:${k.keyId}`);
  expect(pttl).toBeGreaterThan(0);
  expect(pttl).toBeLessThanOrEqual(60_000);
  await redis.persist(`${prefix}rl:inference:${k.keyId}`);
  const second = await admit(k.hash, null);
  expect(second.step === 'counted' && second.counted).toMatchObject({ count: 2, msLeft: 60_000 });
  expect(await redis.pttl(`${prefix}rl:inference:${k.keyId}`)).toBeGreaterThan(0);
});

// 19 before issue 31's first cuts, 17 after them; 15 since the holds are one hash per workspace
// (the request's key and member recorded in its one HSET).
test('admitting a metered request of a key with a creator and no budgets runs 15 commands', async () => {
  const k = await key();
  await redis.hset(ks.rm('balances', '0', 'ws', k.workspaceId), 'balance', '1000');
  await redis.set(ks.rm('balances', '0', 'key-owner', k.keyId), 'u1');
  await admit(k.hash, 1n); // the script loaded, the window open: what follows is a request's usual path
  const ran = await commandsRun(prefix, () => admit(k.hash, 10n));
  expect(ran.map((c) => c[0])).toEqual([
    'evalsha',
    'get',
    'hgetall', // the key index's generation, the key
    'incrby',
    'pttl', // the rate-limit window
    'get',
    'hget',
    'hincrby', // the balances' generation, the balance, the workspace's holds
    'hincrby',
    'get',
    'get', // the key's holds, its budget, its creator
    'hincrby',
    'get', // the member's holds, their budget
    'hset',
    'zadd', // the hold (amount, key, member), and its index entry
  ]);
});
