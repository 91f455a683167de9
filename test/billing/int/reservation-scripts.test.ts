import { Redis } from 'ioredis';
import { reservationKeys } from '../../../src/billing/projections/balances/reservation-keys';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { periodIdsAt } from '../../../src/platform/budget-periods';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { uniquePrefix } from '../../support/redis';
import { commandsRun } from '../../support/redis-monitor';
import { REDIS_TARGETS, SINGLE_REDIS } from '../../support/redis-targets';

/**
 * RESERVE, RELEASE and TO_PENDING (src/billing/projections/balances/*.lua) on the real Redis and on
 * a real 3-node Redis Cluster (where a key outside the workspace's hash tag fails), called directly
 * on a bare keyspace (no projector): exact amounts around 2^53, missing balances and holds, the
 * key's and member's shares, idempotent release and settle. The command counts (MONITOR) are taken
 * on the one Redis.
 */

const TWO_53 = 2n ** 53n;
const periods = periodIdsAt(new Date('2026-11-28T12:00:00Z'));

describe.each(REDIS_TARGETS)('on $name', (target) => {
  const prefix = uniquePrefix('resv');
  const ks = new Keyspace(prefix);
  const redis: Redis = target.connect();
  const resv = new Reservations(redis, ks);
  const keys = (ws: string) => reservationKeys((...p) => ks.shared(...p), ws);
  const onSingle = target === SINGLE_REDIS ? test : test.skip;

  afterAll(async () => {
    redis.disconnect();
    await target.cleanup(prefix);
  });

  let n = 0;
  async function workspace(balance: bigint | null) {
    n++;
    const ws = `ws-${n}`;
    if (balance !== null) await redis.hset(ks.rmWs('balances', '0', ws), 'balance', balance.toString());
    return ws;
  }

  test('a workspace with no balance hash holds nothing, and leaves no index entry', async () => {
    const ws = await workspace(null);
    expect(await resv.reserve(ws, 'r1', 1n, 1)).toEqual({ ok: false, balance: 0n, held: 0n, available: 0n });
    expect(await redis.hlen(keys(ws).held)).toBe(0);
    expect(await redis.zscore(keys(ws).open, `${ws}:r1`)).toBeNull();
  });

  test('amounts past 2^53 are held, settled and released to the unit', async () => {
    const ws = await workspace(TWO_53 * 2n + 1n);
    expect(await resv.reserve(ws, 'a', TWO_53 + 1n, 5)).toMatchObject({ ok: true, held: TWO_53 + 1n });
    expect(await resv.reserve(ws, 'b', TWO_53, 6)).toMatchObject({ ok: true, held: TWO_53 * 2n + 1n });
    expect(await resv.reserve(ws, 'c', 1n, 7)).toMatchObject({ ok: false, available: 0n });
    expect(await resv.markPending(ws, 'a', TWO_53 - 1n)).toBe(true);
    expect(await resv.held(ws)).toBe(TWO_53 * 2n - 1n);
    expect(await redis.hget(keys(ws).held, 'a')).toBe((TWO_53 - 1n).toString());
    await resv.release(ws, 'b');
    expect(await resv.held(ws)).toBe(TWO_53 - 1n);
    expect(await redis.zscore(keys(ws).open, `${ws}:b`)).toBeNull();
    expect(await redis.zscore(keys(ws).open, `${ws}:a`)).toBe('5');
  });

  test("a key's and its creator's shares follow the hold through settle and release, then are deleted", async () => {
    const ws = await workspace(1000n);
    await redis.set(ks.rmWs('balances', '0', ws, 'key-owner', 'k1'), 'u1');
    expect(await resv.reserve(ws, 'r', 300n, 1, { keyId: 'k1', periods })).toMatchObject({ ok: true });
    expect([await resv.heldByKey(ws, 'k1'), await resv.heldByMember(ws, 'u1')]).toEqual([300n, 300n]);
    expect(await resv.markPending(ws, 'r', 120n)).toBe(true);
    expect([await resv.heldByKey(ws, 'k1'), await resv.heldByMember(ws, 'u1'), await resv.held(ws)]).toEqual([120n, 120n, 120n]);
    await resv.release(ws, 'r');
    expect([await resv.heldByKey(ws, 'k1'), await resv.heldByMember(ws, 'u1'), await resv.held(ws)]).toEqual([0n, 0n, 0n]);
    // The sums left the workspace's holds hash at 0, with the request's field: nothing is left.
    expect(await redis.exists(keys(ws).held)).toBe(0);
  });

  test("the member's budget refuses, and every hold the reserve made is undone", async () => {
    const ws = await workspace(1000n);
    await redis.set(ks.rmWs('balances', '0', ws, 'key-owner', 'k2'), 'u2');
    await redis.set(ks.rmWs('balances', '0', ws, 'member-budget', 'u2'), '50');
    await redis.set(ks.rmWs('balances', '0', ws, 'member-budget-period', 'u2'), 'daily');
    await redis.hset(ks.rmWs('balances', '0', ws, 'member-spend', 'u2'), periods.daily, '20');
    const r = await resv.reserve(ws, 'r', 31n, 1, { keyId: 'k2', periods });
    expect(r).toMatchObject({
      ok: false,
      budget: { scope: 'member', budget: 50n, spent: 20n, heldByOthers: 0n, period: 'daily', userId: 'u2' },
    });
    expect([await resv.held(ws), await resv.heldByKey(ws, 'k2'), await resv.heldByMember(ws, 'u2')]).toEqual([0n, 0n, 0n]);
    expect(await resv.reserve(ws, 'r', 30n, 1, { keyId: 'k2', periods })).toMatchObject({ ok: true });
  });

  test('release and settle of a hold that is gone change nothing (a second release, a replayed debit)', async () => {
    const ws = await workspace(10n);
    expect(await resv.reserve(ws, 'r', 10n, 1)).toMatchObject({ ok: true });
    await resv.release(ws, 'r');
    await resv.release(ws, 'r');
    expect(await resv.markPending(ws, 'r', 5n)).toBe(false);
    expect(await resv.held(ws)).toBe(0n);
    expect(await resv.markPending(ws, 'never-held', 5n)).toBe(false);
  });

  onSingle('settling a hold moves each sum with one HINCRBY in the one hash: 6 commands for a hold with a key and a member', async () => {
    const ws = await workspace(1000n);
    await redis.set(ks.rmWs('balances', '0', ws, 'key-owner', 'k9'), 'u9');
    await resv.reserve(ws, 'warm', 1n, 1, { keyId: 'k9', periods });
    await resv.markPending(ws, 'warm', 1n); // loads the script: the count below is EVALSHA's
    await resv.reserve(ws, 'p', 300n, 1, { keyId: 'k9', periods });
    const ran = await commandsRun(prefix, () => resv.markPending(ws, 'p', 120n));
    expect(ran.map((c) => c[0])).toEqual(['evalsha', 'hget', 'hset', 'hincrby', 'hincrby', 'hincrby']);
    expect([await resv.heldByKey(ws, 'k9'), await resv.heldByMember(ws, 'u9'), await resv.held(ws)]).toEqual([121n, 121n, 121n]);
  });

  // Before issue 31 a release was 10 commands (HGET, HDEL and DECRBY on each of three hashes and
  // their totals, then the ZREM), 12 when a share reached 0.
  onSingle('a release is an HGET, an HINCRBY per sum, one HDEL (the request and every sum at 0) and the ZREM', async () => {
    const ws = await workspace(1000n);
    await redis.set(ks.rmWs('balances', '0', ws, 'key-owner', 'k8'), 'u8');
    await resv.reserve(ws, 'warm', 1n, 1, { keyId: 'k8', periods });
    await resv.release(ws, 'warm'); // loads the script
    await resv.reserve(ws, 'other', 5n, 1, { keyId: 'k8', periods });
    await resv.reserve(ws, 'r', 300n, 1, { keyId: 'k8', periods });
    const ran = await commandsRun(prefix, () => resv.release(ws, 'r'));
    expect(ran.map((c) => c[0])).toEqual(['evalsha', 'hget', 'hincrby', 'hincrby', 'hincrby', 'hdel', 'zrem']);
    expect(await redis.hgetall(keys(ws).held)).toEqual({ other: '5\0k8\0u8', '=total': '5', '=k:k8': '5', '=m:u8': '5' });
    const last = await commandsRun(prefix, () => resv.release(ws, 'other'));
    expect(last.find((c) => c[0] === 'hdel')![1]).toMatch(/"other" "=total" "=k:k8" "=m:u8"$/);
    expect(await redis.exists(keys(ws).held)).toBe(0);
  });

  test("a key's and its member's sums past 2^53 stay exact through reserve, refusal, settle and release", async () => {
    const ws = await workspace(TWO_53 * 4n);
    await redis.set(ks.rmWs('balances', '0', ws, 'key-owner', 'kb'), 'ub');
    await redis.set(ks.rmWs('balances', '0', ws, 'key-budget', 'kb'), (TWO_53 * 2n + 1n).toString());
    const k = { keyId: 'kb', periods };
    expect(await resv.reserve(ws, 'a', TWO_53 + 1n, 1, k)).toMatchObject({ ok: true, held: TWO_53 + 1n });
    expect(await resv.reserve(ws, 'b', TWO_53 - 1n, 2, k)).toMatchObject({ ok: true, held: TWO_53 * 2n });
    // One over the key's budget: refused, and what the others hold is given to the unit.
    expect(await resv.reserve(ws, 'c', 2n, 3, k)).toMatchObject({
      ok: false,
      held: TWO_53 * 2n,
      budget: { scope: 'key', budget: TWO_53 * 2n + 1n, heldByOthers: TWO_53 * 2n },
    });
    expect([await resv.held(ws), await resv.heldByKey(ws, 'kb'), await resv.heldByMember(ws, 'ub')]).toEqual([
      TWO_53 * 2n,
      TWO_53 * 2n,
      TWO_53 * 2n,
    ]);
    expect(await resv.markPending(ws, 'a', TWO_53 + 3n)).toBe(true);
    expect([await resv.held(ws), await resv.heldByKey(ws, 'kb'), await resv.heldByMember(ws, 'ub')]).toEqual([
      TWO_53 * 2n + 2n,
      TWO_53 * 2n + 2n,
      TWO_53 * 2n + 2n,
    ]);
    await resv.release(ws, 'b');
    expect([await resv.held(ws), await resv.heldByKey(ws, 'kb'), await resv.heldByMember(ws, 'ub')]).toEqual([
      TWO_53 + 3n,
      TWO_53 + 3n,
      TWO_53 + 3n,
    ]);
    await resv.release(ws, 'a');
    expect(await redis.exists(keys(ws).held)).toBe(0);
  });
});
